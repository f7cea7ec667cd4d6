package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools/web/webconfig"
)

// SearchConfig configures web_search (see webconfig.Search).
type SearchConfig = webconfig.Search

// Default endpoints.
const (
	BraveURL  = "https://api.search.brave.com/res/v1/web/search"
	TavilyURL = "https://api.tavily.com/search"
)

// endpoint is the URL requests go to.
func endpoint(c SearchConfig) string {
	if c.URL != "" {
		return c.URL
	}
	switch c.Provider {
	case "brave":
		return BraveURL
	case "tavily":
		return TavilyURL
	}
	return ""
}

// SearchResult is one hit.
type SearchResult struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

type searchRequest struct {
	Query string
	Limit int
	Site  string
}

// errNoProvider says why web_search is unavailable without a provider.
const errNoProvider = "has no provider configured; set web.search.provider (searxng, brave or tavily) in toold's config, with web.search.url and web.search.api_key_env as the provider needs"

// search asks the configured provider.
func (t *Web) search(ctx context.Context, req searchRequest) ([]SearchResult, error) {
	c := t.opts.Search
	if c.Provider == "" {
		return nil, errdefs.New(errdefs.ErrUnavailable, "web_search %s", errNoProvider)
	}
	key := ""
	if c.APIKeyEnv != "" {
		key = os.Getenv(c.APIKeyEnv)
		if key == "" && c.Provider != "searxng" {
			return nil, errdefs.New(errdefs.ErrUnavailable, "web_search: the environment variable %s (web.search.api_key_env) that should hold the %s API key is empty in toold's environment", c.APIKeyEnv, c.Provider)
		}
	}
	var hr *http.Request
	var err error
	q := req.Query
	if req.Site != "" && c.Provider != "tavily" {
		q += " site:" + req.Site
	}
	switch c.Provider {
	case "searxng":
		u, _ := url.Parse(strings.TrimSuffix(endpoint(c), "/") + "/search")
		v := url.Values{"q": {q}, "format": {"json"}}
		u.RawQuery = v.Encode()
		hr, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err == nil && key != "" {
			hr.Header.Set("Authorization", "Bearer "+key)
		}
	case "brave":
		u, _ := url.Parse(endpoint(c))
		v := url.Values{"q": {q}, "count": {strconv.Itoa(min(req.Limit, 20))}}
		u.RawQuery = v.Encode()
		hr, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err == nil {
			hr.Header.Set("X-Subscription-Token", key)
		}
	case "tavily":
		body := map[string]any{"query": q, "max_results": min(req.Limit, 20)}
		if req.Site != "" {
			body["include_domains"] = []string{req.Site}
		}
		b, _ := json.Marshal(body)
		hr, err = http.NewRequestWithContext(ctx, http.MethodPost, endpoint(c), bytes.NewReader(b))
		if err == nil {
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("Authorization", "Bearer "+key)
		}
	}
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInternal, err, "cannot build the search request")
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", t.search_.userAgent)
	resp, err := t.search_.client.Do(hr)
	if err != nil {
		return nil, t.search_.classify(ctx, hr.URL, err, t.opts.SearchTimeout)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "reading the %s answer failed: %v", c.Provider, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, errdefs.Failed("%s answered %s: %s", c.Provider, resp.Status, snippet(string(body), 200))
	}
	out, err := parseResults(c.Provider, body)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "%s sent an answer toold cannot read: %v", c.Provider, err)
	}
	if len(out) > req.Limit {
		out = out[:req.Limit]
	}
	return out, nil
}

// parseResults reads each provider's documented response format.
func parseResults(provider string, body []byte) ([]SearchResult, error) {
	var out []SearchResult
	switch provider {
	case "searxng":
		var r struct {
			Results []struct {
				Title, URL, Content string
			} `json:"results"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, err
		}
		for _, x := range r.Results {
			out = append(out, SearchResult{Title: x.Title, URL: x.URL, Snippet: x.Content})
		}
	case "brave":
		var r struct {
			Web struct {
				Results []struct {
					Title, URL, Description string
				} `json:"results"`
			} `json:"web"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, err
		}
		for _, x := range r.Web.Results {
			out = append(out, SearchResult{Title: x.Title, URL: x.URL, Snippet: stripTags(x.Description)})
		}
	case "tavily":
		var r struct {
			Results []struct {
				Title, URL, Content string
			} `json:"results"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, err
		}
		for _, x := range r.Results {
			out = append(out, SearchResult{Title: x.Title, URL: x.URL, Snippet: x.Content})
		}
	}
	for i := range out {
		out[i].Title = strings.TrimSpace(out[i].Title)
		out[i].Snippet = snippet(out[i].Snippet, 400)
	}
	return out, nil
}

// stripTags drops the <strong> highlighting Brave puts in descriptions.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func snippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
