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

// Validate checks the web settings.
func (w Web) Validate() error { return w.Search.Validate() }
