// Package web is the web_operations tool: web_fetch (a page as Markdown,
// text or raw, through the SSRF guard of pkg/netguard), read_page (the rest
// of a fetched page) and web_search (a configured provider: SearXNG, Brave
// or Tavily).
package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/netguard"
	"github.com/toold/toold/pkg/tools"
)

// Options configure the tool.
type Options struct {
	// Guard refuses private and metadata addresses; nil means a zero Guard
	// (refuse them all).
	Guard *netguard.Guard
	// Rules, when set, open private and loopback addresses (never
	// metadata) to a host that a policy rule names explicitly for
	// web_fetch (netguard.AllowByRules), besides what Guard.AllowPrivate
	// allows. The daemon passes the policy's.
	Rules netguard.HostRules
	// Proxy returns the proxy for a URL (nil: none). The daemon passes the
	// environment's (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), read once.
	Proxy func(*url.URL) (*url.URL, error)
	// Search configures web_search.
	Search SearchConfig
	// SearchTimeout bounds a search; zero means 20 s.
	SearchTimeout time.Duration
	// Limits shape results (OutputBytes is the head shown).
	Limits tools.Limits
	// UserAgent is sent with requests.
	UserAgent string
	// KeepBytes bounds the fetched pages kept for read_page (default 64 MiB).
	KeepBytes int
	// FetchMemory bounds the memory held by every web_fetch in flight
	// together (default DefaultFetchMemory): decoded body bytes are
	// counted as they are read (three bytes of budget each: the buffer
	// and the converted text), plus each decoder's window. A fetch waits
	// for its first share; one that cannot get more fails
	// RESOURCE_EXHAUSTED, saying why (see budget.go).
	FetchMemory int64
}

// Web is the web_operations tool.
type Web struct {
	opts    Options
	fetch_  *fetcher
	search_ *fetcher
	pages   *pageStore
	spec    tools.Spec
}

var _ tools.Tool = (*Web)(nil)

// ToolName is the web tool's name.
const ToolName = "web_operations"

// New builds the tool.
func New(opts Options) *Web {
	if opts.Guard == nil {
		opts.Guard = &netguard.Guard{}
	}
	if byRule := netguard.AllowByRules(opts.Rules, ToolName, "web_fetch"); byRule != nil {
		g := *opts.Guard
		prev := g.AllowPrivate
		g.AllowPrivate = func(h string) bool { return byRule(h) || (prev != nil && prev(h)) }
		opts.Guard = &g
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "toold-web_fetch/1 (+https://github.com/toold/toold)"
	}
	if opts.SearchTimeout <= 0 {
		opts.SearchTimeout = 20 * time.Second
	}
	if opts.KeepBytes <= 0 {
		opts.KeepBytes = 64 << 20
	}
	opts.Limits = opts.Limits.WithDefaults()
	t := &Web{opts: opts, pages: &pageStore{max: opts.KeepBytes}}
	t.fetch_ = newFetcher(opts.Guard, opts.Proxy, opts.UserAgent)
	t.fetch_.budget = newBudget(opts.FetchMemory)
	// The search provider is the operator's choice: its host may be on a
	// private network (a self-hosted SearXNG). Metadata stays refused.
	sg := *opts.Guard
	if u, err := url.Parse(endpoint(opts.Search)); err == nil && u.Host != "" {
		provider := hostOf(u)
		prev := opts.Guard.AllowPrivate
		sg.AllowPrivate = func(h string) bool { return h == provider || (prev != nil && prev(h)) }
	}
	t.search_ = newFetcher(&sg, opts.Proxy, opts.UserAgent)
	t.search_.budget = t.fetch_.budget
	t.spec = tools.Spec{
		Name:        ToolName,
		Description: "Reach the web: fetch a page as Markdown (web_fetch), read more of a fetched page (read_page), search the web (web_search).",
		Source:      "builtin",
		Operations: []tools.OperationSpec{
			{Name: "web_fetch", Risk: tools.RiskMedium, Schema: fetchSchema,
				Description: "Fetch an http(s) URL. HTML becomes Markdown of the main content (format markdown, the default), plain text (text) or the HTML as is (raw); JSON is pretty-printed; binary content is described. Redirects are followed (at most 5). Private, loopback and cloud metadata addresses are refused. The head is shown; read the rest with read_page."},
			{Name: "read_page", Risk: tools.RiskLow, Schema: readPageSchema,
				Description: "Read a page that web_fetch kept, from a byte offset: {call_id, offset, limit}."},
			{Name: "web_search", Risk: tools.RiskLow, Schema: searchSchema,
				Description: "Search the web with the configured provider; returns title, URL and snippet of each hit."},
		},
	}
	if _, off := SearchUnavailable(opts); off {
		// No provider: web_search is not offered (the model would only
		// get UNAVAILABLE); the registry reports it as unavailable.
		t.spec.Description = "Reach the web: fetch a page as Markdown (web_fetch), read more of a fetched page (read_page)."
		t.spec.Operations = t.spec.Operations[:2]
	}
	return t
}

// SearchUnavailable reports, with no search provider configured, the
// web_search operation as a tool toold knows but does not offer, and why
// (for tools.Registry.SetUnavailable); ok is false when a provider is set.
func SearchUnavailable(opts Options) (u tools.Unavailable, ok bool) {
	if opts.Search.Provider != "" {
		return tools.Unavailable{}, false
	}
	return tools.Unavailable{Name: "web_search", Operations: []string{"web_search"}, Reason: errNoProvider}, true
}

// Close releases idle connections.
func (t *Web) Close() {
	t.fetch_.transport.CloseIdleConnections()
	t.search_.transport.CloseIdleConnections()
}

var fetchSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "The http or https URL to fetch."},
    "format": {"type": "string", "enum": ["markdown", "text", "raw"], "description": "How to return HTML: markdown (default; main content only), text, or raw."},
    "max_bytes": {"type": "integer", "minimum": 1, "maximum": 20971520, "description": "Stop reading the body after this many bytes (default 5 MiB)."},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 120, "description": "Seconds for the whole fetch (default 30)."}
  },
  "required": ["url"],
  "additionalProperties": false
}`)

var readPageSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "call_id": {"type": "string", "description": "The call_id of the web_fetch call."},
    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to read from (default 0)."},
    "limit": {"type": "integer", "minimum": 1, "description": "Bytes to read (default 32 KiB)."}
  },
  "required": ["call_id"],
  "additionalProperties": false
}`)

var searchSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "description": "What to search for."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Results to return (default 8)."},
    "site": {"type": "string", "description": "Only results from this domain (example.com)."}
  },
  "required": ["query"],
  "additionalProperties": false
}`)

// Spec implements tools.Tool.
func (t *Web) Spec() tools.Spec { return t.spec }

// Describe implements tools.Tool: a fetch reaches its URL's host; a search
// reaches the provider's.
func (t *Web) Describe(call *tools.Call) tools.Effect {
	switch call.Operation {
	case "web_fetch":
		raw, _ := call.Args["url"].(string)
		e := tools.Effect{Display: "Fetching " + tools.Clip(raw, 80)}
		if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.Hostname() != "" {
			e.Hosts = []string{hostOf(u)}
		} else {
			// An unparseable URL fails in Run; give policy something to judge.
			e.Hosts = []string{raw}
		}
		return e
	case "web_search":
		q, _ := call.Args["query"].(string)
		e := tools.Effect{Display: "Searching the web: " + tools.Clip(q, 60)}
		if u, err := url.Parse(endpoint(t.opts.Search)); err == nil && u.Host != "" {
			e.Hosts = []string{hostOf(u)}
		}
		return e
	}
	id, _ := call.Args["call_id"].(string)
	return tools.Effect{Display: "Reading fetched page " + tools.Clip(id, 40)}
}

// Run implements tools.Tool.
func (t *Web) Run(ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	switch call.Operation {
	case "web_fetch":
		return t.runFetch(ctx, call, sink)
	case "read_page":
		return t.runReadPage(call)
	case "web_search":
		return t.runSearch(ctx, call)
	}
	return nil, errdefs.New(errdefs.ErrToolNotFound, "web_operations has no operation %q", call.Operation)
}

func (t *Web) runFetch(ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	var a struct {
		URL      string   `json:"url"`
		Format   string   `json:"format"`
		MaxBytes int      `json:"max_bytes"`
		Timeout  *float64 `json:"timeout"`
	}
	if err := call.Bind(&a); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalidArgument, err, "bad arguments: %v", err)
	}
	u, err := parseURL(a.URL)
	if err != nil {
		return nil, err
	}
	req := fetchRequest{URL: u, Format: a.Format, MaxBytes: a.MaxBytes, Timeout: DefaultTimeout}
	if req.Format == "" {
		req.Format = "markdown"
	}
	if req.MaxBytes <= 0 {
		req.MaxBytes = DefaultMaxBytes
	}
	req.MaxBytes = min(req.MaxBytes, MaxMaxBytes)
	if a.Timeout != nil {
		req.Timeout = min(time.Duration(*a.Timeout*float64(time.Second)), MaxTimeout)
	}
	// A redirect that leaves the host the call was authorized for is a
	// further effect of the call: the executor judges it (Sink.Authorize)
	// like the call itself, with the stream's mode, traced and audited,
	// asking the person when policy says ask. Without a policy to ask, such
	// a redirect is not followed.
	judge := func(ctx context.Context, host string) error {
		if sink == nil || sink.Authorize == nil {
			return errdefs.New(errdefs.ErrDenied, "the page redirects to another host, %s, and nothing here can authorize reaching it; call web_fetch with the new URL", host)
		}
		return sink.Authorize(ctx, tools.Effect{Display: "Following a redirect to " + host, Hosts: []string{host}, Risk: tools.RiskMedium})
	}
	_ = sink.Progress("fetching "+u.Redacted(), -1)
	start := time.Now()
	p, err := t.fetch_.fetch(ctx, req, judge)
	if err != nil {
		return nil, err
	}
	return t.shape(call, p, time.Since(start)), nil
}

// shape builds the result: a status line, the head of the content, and the
// whole content kept for read_page.
func (t *Web) shape(call *tools.Call, p *page, took time.Duration) *tools.Result {
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "%s — HTTP %d", p.URL, p.Status)
	if p.ContentType != "" {
		fmt.Fprintf(&hdr, ", %s", p.ContentType)
	}
	fmt.Fprintf(&hdr, ", %d bytes as %s", p.RawBytes, p.Format)
	if p.Truncated {
		hdr.WriteString(" (the body was longer than max_bytes; the rest was not downloaded)")
	}
	if len(p.Redirects) > 0 {
		fmt.Fprintf(&hdr, "; redirected %d time(s)", len(p.Redirects))
	}
	hdr.WriteString("\n")
	if p.Title != "" {
		fmt.Fprintf(&hdr, "Title: %s\n", p.Title)
	}
	if p.Status >= 400 {
		fmt.Fprintf(&hdr, "The server answered with an error status (%d).\n", p.Status)
	}
	hdr.WriteString("\n")
	content := p.Content
	total := len(content)
	limit := t.opts.Limits.OutputBytes
	res := &tools.Result{
		Structured: map[string]any{
			"url": p.URL, "status": p.Status, "content_type": p.ContentType, "format": p.Format,
			"bytes": p.RawBytes, "content_bytes": total, "truncated_body": p.Truncated,
			"redirects": p.Redirects, "title": p.Title, "duration_ms": took.Milliseconds(),
		},
	}
	if total <= limit {
		res.Text = hdr.String() + content
		return res
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(content[cut]) {
		cut--
	}
	kept := t.pages.put(call.ConversationID, call.ID, content)
	more := fmt.Sprintf("\n\n[shown %d of %d bytes", cut, total)
	if kept {
		more += fmt.Sprintf("; read on with read_page {\"call_id\": %q, \"offset\": %d}]", call.ID, cut)
	} else {
		more += "; the page is too large to keep, fetch it again with format text or a smaller max_bytes]"
	}
	res.Text = hdr.String() + content[:cut] + more
	res.Truncation = &tools.Truncation{ShownBytes: uint64(cut), TotalBytes: uint64(total)}
	if kept {
		res.Truncation.Continuation = fmt.Sprintf("read_page call_id=%s offset=%d", call.ID, cut)
	}
	return res
}

func (t *Web) runReadPage(call *tools.Call) (*tools.Result, error) {
	var a struct {
		CallID string `json:"call_id"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := call.Bind(&a); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalidArgument, err, "bad arguments: %v", err)
	}
	content, ok := t.pages.get(call.ConversationID, a.CallID)
	if !ok {
		return nil, errdefs.Invalid("/call_id", "exists", "no kept page for call_id %q in this conversation (pages are kept only when they were cut, and the oldest are dropped); fetch the URL again", a.CallID)
	}
	if a.Offset > len(content) {
		return nil, errdefs.Invalid("/offset", "maximum", "offset %d is past the end of the page (%d bytes)", a.Offset, len(content))
	}
	if a.Limit <= 0 {
		a.Limit = t.opts.Limits.OutputBytes
	}
	start := a.Offset
	for start < len(content) && !utf8.RuneStart(content[start]) {
		start++
	}
	end := min(len(content), start+a.Limit)
	for end < len(content) && !utf8.RuneStart(content[end]) {
		end--
	}
	text := content[start:end]
	res := &tools.Result{Text: text, Structured: map[string]any{"offset": start, "end": end, "total_bytes": len(content)}}
	if end < len(content) {
		res.Text += fmt.Sprintf("\n\n[bytes %d-%d of %d; read on with offset %d]", start, end, len(content), end)
		res.Truncation = &tools.Truncation{ShownBytes: uint64(end - start), TotalBytes: uint64(len(content)),
			Continuation: fmt.Sprintf("read_page call_id=%s offset=%d", a.CallID, end)}
	}
	return res, nil
}

func (t *Web) runSearch(ctx context.Context, call *tools.Call) (*tools.Result, error) {
	var a struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
		Site  string `json:"site"`
	}
	if err := call.Bind(&a); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalidArgument, err, "bad arguments: %v", err)
	}
	if a.Limit <= 0 {
		a.Limit = 8
	}
	if strings.ContainsAny(a.Site, " /:") {
		return nil, errdefs.Invalid("/site", "format", "site must be a domain such as example.com, not %q", a.Site)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, t.opts.SearchTimeout, errFetchTimeout)
	defer cancel()
	hits, err := t.search(ctx, searchRequest{Query: a.Query, Limit: a.Limit, Site: a.Site})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if len(hits) == 0 {
		fmt.Fprintf(&b, "No results for %q.", a.Query)
	}
	for i, h := range hits {
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, h.Title, h.URL)
		if h.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", h.Snippet)
		}
	}
	items := make([]any, len(hits))
	for i, h := range hits {
		items[i] = map[string]any{"title": h.Title, "url": h.URL, "snippet": h.Snippet}
	}
	return &tools.Result{Text: strings.TrimRight(b.String(), "\n"), Structured: map[string]any{
		"provider": t.opts.Search.Provider, "results": items}}, nil
}

// pageStore keeps fetched pages for read_page, oldest dropped first, at
// most max bytes in all.
type pageStore struct {
	mu    sync.Mutex
	max   int
	size  int
	order []pageKey
	pages map[pageKey]string
}

type pageKey struct{ conv, call string }

// put keeps content; false when it is larger than the whole store.
func (s *pageStore) put(conv, call, content string) bool {
	if len(content) > s.max {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pages == nil {
		s.pages = map[pageKey]string{}
	}
	k := pageKey{conv, call}
	if old, ok := s.pages[k]; ok {
		s.size -= len(old)
		for i, o := range s.order {
			if o == k {
				s.order = append(s.order[:i], s.order[i+1:]...)
				break
			}
		}
	}
	for s.size+len(content) > s.max && len(s.order) > 0 {
		old := s.order[0]
		s.order = s.order[1:]
		s.size -= len(s.pages[old])
		delete(s.pages, old)
	}
	s.pages[k] = content
	s.order = append(s.order, k)
	s.size += len(content)
	return true
}

func (s *pageStore) get(conv, call string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.pages[pageKey{conv, call}]
	return c, ok
}
