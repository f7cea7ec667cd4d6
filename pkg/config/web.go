package config

import (
	"fmt"

	"github.com/toold/toold/pkg/tools/web"
)

// Web configures web_operations (web_fetch, web_search).
//
//	web:
//	  search:
//	    provider: searxng          # searxng, brave or tavily
//	    url: https://searx.example.org/
//	    api_key_env: SEARCH_API_KEY  # brave and tavily: the variable holding the key
//	  fetch_memory_bytes: 134217728  # every fetch in flight together (default 128 MiB)
type Web struct {
	// Search configures web_search's provider; without one, web_search
	// fails with an error naming web.search.provider.
	Search web.SearchConfig `yaml:"search"`
	// FetchMemoryBytes bounds the memory every web_fetch in flight holds
	// together (decoded body bytes as they are read, their conversion and
	// the decoders' windows); 0 is web.DefaultFetchMemory (128 MiB). A
	// fetch waits for its share, or fails RESOURCE_EXHAUSTED saying why.
	FetchMemoryBytes int64 `yaml:"fetch_memory_bytes"`
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
func (w Web) Validate() error {
	if w.FetchMemoryBytes < 0 || (w.FetchMemoryBytes > 0 && w.FetchMemoryBytes < 1<<20) {
		return fmt.Errorf("web.fetch_memory_bytes %d: want 0 (the default, 128 MiB) or at least 1 MiB (1048576)", w.FetchMemoryBytes)
	}
	return w.Search.Validate()
}
