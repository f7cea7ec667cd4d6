package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/netguard"
	"github.com/toold/toold/pkg/tools"
)

// Each provider's documented response format (trimmed samples of real
// answers: SearXNG /search?format=json, Brave Web Search API v1, Tavily
// /search).
const (
	searxngAnswer = `{"query":"gopher","number_of_results":0,"results":[
 {"url":"https://go.dev/","title":"The Go Programming Language","content":"Go is an open source programming language.","engine":"duckduckgo","engines":["duckduckgo"],"score":2.0,"category":"general"},
 {"url":"https://en.wikipedia.org/wiki/Gopher","title":"Gopher - Wikipedia","content":"Pocket gophers are  burrowing rodents.","engine":"wikipedia","score":1.0}],
 "answers":[],"corrections":[],"infoboxes":[],"suggestions":["gopher protocol"],"unresponsive_engines":[]}`
	braveAnswer = `{"query":{"original":"gopher"},"type":"search","web":{"type":"search","results":[
 {"title":"The Go Programming Language","url":"https://go.dev/","is_source_local":false,"description":"<strong>Go</strong> is an open source programming language.","page_age":"2024-01-01T00:00:00","profile":{"name":"Go"},"language":"en","family_friendly":true,"type":"search_result"},
 {"title":"Gopher - Wikipedia","url":"https://en.wikipedia.org/wiki/Gopher","description":"Pocket <strong>gophers</strong> are burrowing rodents.","type":"search_result"}],"family_friendly":true}}`
	tavilyAnswer = `{"query":"gopher","follow_up_questions":null,"answer":null,"images":[],"results":[
 {"title":"The Go Programming Language","url":"https://go.dev/","content":"Go is an open source programming language.","score":0.98,"raw_content":null},
 {"title":"Gopher - Wikipedia","url":"https://en.wikipedia.org/wiki/Gopher","content":"Pocket gophers are burrowing rodents.","score":0.7,"raw_content":null}],"response_time":1.2}`
)

func TestSearchProviders(t *testing.T) {
	t.Setenv("TOOLD_TEST_SEARCH_KEY", "k-123")
	for _, c := range []struct {
		provider string
		check    func(r *http.Request, body []byte) string // "" when the request is right
		answer   string
	}{
		{"searxng", func(r *http.Request, _ []byte) string {
			q := r.URL.Query()
			if r.Method != "GET" || r.URL.Path != "/searx/search" || q.Get("format") != "json" || q.Get("q") != "gopher site:go.dev" {
				return r.Method + " " + r.URL.String()
			}
			return ""
		}, searxngAnswer},
		{"brave", func(r *http.Request, _ []byte) string {
			q := r.URL.Query()
			if r.Method != "GET" || r.Header.Get("X-Subscription-Token") != "k-123" || q.Get("q") != "gopher site:go.dev" || q.Get("count") != "2" {
				return r.Method + " " + r.URL.String() + " token=" + r.Header.Get("X-Subscription-Token")
			}
			return ""
		}, braveAnswer},
		{"tavily", func(r *http.Request, body []byte) string {
			var b struct {
				Query          string   `json:"query"`
				MaxResults     int      `json:"max_results"`
				IncludeDomains []string `json:"include_domains"`
			}
			if err := json.Unmarshal(body, &b); err != nil || r.Method != "POST" || r.Header.Get("Authorization") != "Bearer k-123" ||
				b.Query != "gopher" || b.MaxResults != 2 || len(b.IncludeDomains) != 1 || b.IncludeDomains[0] != "go.dev" {
				return r.Method + " " + string(body) + " auth=" + r.Header.Get("Authorization")
			}
			return ""
		}, tavilyAnswer},
	} {
		t.Run(c.provider, func(t *testing.T) {
			bad := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if msg := c.check(r, body); msg != "" {
					bad <- msg
					http.Error(w, "bad request", 400)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, c.answer)
			}))
			t.Cleanup(srv.Close)
			u := srv.URL
			if c.provider == "searxng" {
				u += "/searx/"
			}
			// The provider is on loopback: reachable because the operator
			// configured it, with a zero guard otherwise.
			w := newTool(t, &netguard.Guard{}, Options{Search: SearchConfig{Provider: c.provider, URL: u, APIKeyEnv: "TOOLD_TEST_SEARCH_KEY"}})
			call := &tools.Call{ID: "s", ConversationID: "conv", Tool: "web_operations", Operation: "web_search",
				Args: map[string]any{"query": "gopher", "limit": 2, "site": "go.dev"}}
			r, err := w.Run(context.Background(), call, nopSink())
			select {
			case msg := <-bad:
				t.Fatalf("request: %s", msg)
			default:
			}
			if err != nil {
				t.Fatal(err)
			}
			want := "1. The Go Programming Language\n   https://go.dev/\n   Go is an open source programming language.\n2. Gopher - Wikipedia\n   https://en.wikipedia.org/wiki/Gopher\n   Pocket gophers are burrowing rodents."
			if r.Text != want {
				t.Fatalf("text:\n%s\nwant:\n%s", r.Text, want)
			}
			if n := len(r.Structured["results"].([]any)); n != 2 {
				t.Fatalf("%d results", n)
			}
			if e := w.Describe(call); len(e.Hosts) != 1 || e.Hosts[0] != "127.0.0.1" {
				t.Fatalf("effect hosts %v", e.Hosts)
			}
		})
	}
}

func TestSearchErrors(t *testing.T) {
	ctx := context.Background()
	call := &tools.Call{ID: "s", Tool: "web_operations", Operation: "web_search", Args: map[string]any{"query": "x"}}
	_, err := New(Options{}).Run(ctx, call, nopSink())
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "web.search.provider") {
		t.Fatalf("no provider: %v", err)
	}
	t.Setenv("TOOLD_TEST_EMPTY_KEY", "")
	w := New(Options{Search: SearchConfig{Provider: "brave", APIKeyEnv: "TOOLD_TEST_EMPTY_KEY"}})
	defer w.Close()
	if _, err := w.Run(ctx, call, nopSink()); !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "TOOLD_TEST_EMPTY_KEY") {
		t.Fatalf("empty key: %v", err)
	}
	// A provider that answers an error status or garbage.
	for _, h := range []http.HandlerFunc{
		func(w http.ResponseWriter, r *http.Request) { http.Error(w, "rate limited", 429) },
		func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>not json") },
	} {
		srv := httptest.NewServer(h)
		w := New(Options{Search: SearchConfig{Provider: "searxng", URL: srv.URL}})
		_, err := w.Run(ctx, call, nopSink())
		w.Close()
		srv.Close()
		if !errors.Is(err, errdefs.ErrFailed) {
			t.Fatalf("bad provider answer: %v", err)
		}
	}
	for _, c := range []SearchConfig{{Provider: "bing"}, {Provider: "searxng"}, {Provider: "brave"}, {Provider: "tavily", APIKeyEnv: "K", URL: "ftp://x"}} {
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}
