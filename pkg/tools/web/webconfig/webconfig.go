// Package webconfig is the web plugin's configuration section ("web:" in
// toold's YAML: web_fetch and web_search). It is owned by pkg/tools/web and
// imports nothing of toold's, so pkg/config and toolctl do not link the
// fetcher.
package webconfig

import (
	"fmt"
	"net/url"
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
	Search Search `yaml:"search"`
	// FetchMemoryBytes bounds the memory every web_fetch in flight holds
	// together (decoded body bytes as they are read, their conversion and
	// the decoders' windows); 0 is the web plugin's DefaultFetchMemory (128 MiB). A
	// fetch waits for its share, or fails RESOURCE_EXHAUSTED saying why.
	FetchMemoryBytes int64 `yaml:"fetch_memory_bytes"`
}

// Search configures web_search (toold's config key web.search).
type Search struct {
	// Provider is "searxng", "brave" or "tavily"; empty disables web_search.
	Provider string `yaml:"provider"`
	// URL is the provider's endpoint: required for SearXNG (the instance's
	// base URL); Brave and Tavily default to their public APIs.
	URL string `yaml:"url"`
	// APIKeyEnv names the environment variable holding the API key (Brave
	// and Tavily; optional for SearXNG). The key itself is never in the
	// config file.
	APIKeyEnv string `yaml:"api_key_env"`
}

// Validate checks the configuration; an empty Provider is valid (off).
func (c Search) Validate() error {
	switch c.Provider {
	case "":
		return nil
	case "searxng":
		if c.URL == "" {
			return fmt.Errorf("web.search.url: SearXNG needs the instance's URL")
		}
	case "brave", "tavily":
		if c.APIKeyEnv == "" {
			return fmt.Errorf("web.search.api_key_env: %s needs the name of the environment variable that holds the API key", c.Provider)
		}
	default:
		return fmt.Errorf("web.search.provider: unknown provider %q (want searxng, brave or tavily)", c.Provider)
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("web.search.url: %q is not an http(s) URL", c.URL)
		}
	}
	return nil
}

// Validate checks the web settings.
func (w Web) Validate() error {
	if w.FetchMemoryBytes < 0 || (w.FetchMemoryBytes > 0 && w.FetchMemoryBytes < 1<<20) {
		return fmt.Errorf("web.fetch_memory_bytes %d: want 0 (the default, 128 MiB) or at least 1 MiB (1048576)", w.FetchMemoryBytes)
	}
	return w.Search.Validate()
}
