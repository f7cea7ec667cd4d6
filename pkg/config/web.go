package config

import "github.com/toold/toold/pkg/tools/web"

// Web configures web_operations (web_fetch, web_search).
//
//	web:
//	  search:
//	    provider: searxng          # searxng, brave or tavily
//	    url: https://searx.example.org/
//	    api_key_env: SEARCH_API_KEY  # brave and tavily: the variable holding the key
type Web struct {
	// Search configures web_search's provider; without one, web_search
	// fails with an error naming web.search.provider.
	Search web.SearchConfig `yaml:"search"`
}

// VCS configures build_and_version_control.
//
//	vcs:
//	  hooks: true   # let git run the repository's hooks (default false)
type VCS struct {
	// Hooks lets git run the repository's hooks (pre-commit, ...). Off by
	// default: hooks are programs the repository names.
	Hooks bool `yaml:"hooks"`
}

// Validate checks the web settings.
func (w Web) Validate() error { return w.Search.Validate() }
