package web

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/andybalholm/brotli"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/netguard"
)

// Fetch limits.
const (
	DefaultMaxBytes = 5 << 20
	MaxMaxBytes     = 20 << 20
	DefaultTimeout  = 30 * time.Second
	MaxTimeout      = 120 * time.Second
	MaxRedirects    = 5
)

// page is a fetched document, converted.
type page struct {
	URL         string // final URL after redirects
	Status      int
	ContentType string
	Format      string // markdown, text, raw, json, binary
	Title       string
	Content     string
	// RawBytes is the decoded body size; Truncated says the body was larger
	// than max_bytes and the rest was not read.
	RawBytes  int
	Truncated bool
	Redirects []string
}

// fetchRequest is a validated web_fetch.
type fetchRequest struct {
	URL      *url.URL
	Format   string
	MaxBytes int
	Timeout  time.Duration
}

// parseURL checks a URL given by the model.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, errdefs.Invalid("/url", "format", "url %q is not a valid URL: %v", raw, err)
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

func checkURL(u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return errdefs.Invalid("/url", "format", "only http and https URLs can be fetched, not %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return errdefs.Invalid("/url", "format", "url %q has no host", u.String())
	}
	if u.User != nil {
		return errdefs.Invalid("/url", "format", "url %q carries credentials (user@host); toold does not send them", u.Redacted())
	}
	return nil
}

// hostOf is the host of u as policy sees it: lowercased, without port or
// brackets, without a trailing dot.
func hostOf(u *url.URL) string {
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

// fetcher does HTTP for web_fetch and the search providers.
type fetcher struct {
	client    *http.Client
	transport *http.Transport
	userAgent string
	budget    *budget // shared by the fetchers of one Web
}

// newFetcher builds the HTTP client: every connection goes through the
// guard's dialer; a proxy from proxyFunc is honoured, and the target host
// of a proxied request is checked by resolving it here first (the proxy
// itself is the operator's and is dialed directly).
func newFetcher(g *netguard.Guard, proxyFunc func(*url.URL) (*url.URL, error), userAgent string) *fetcher {
	f := &fetcher{userAgent: userAgent}
	proxies := map[string]bool{}
	t := &http.Transport{
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  30 * time.Second,
		DisableKeepAlives:      true,
		DisableCompression:     true, // decoded here, bounded
		MaxResponseHeaderBytes: 64 << 10,
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if proxies[addr] {
			// The operator's proxy: reached as configured.
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
		return g.DialContext(ctx, network, addr)
	}
	if proxyFunc != nil {
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			p, err := proxyFunc(req.URL)
			if err != nil || p == nil {
				return nil, err
			}
			if err := checkProxied(req.Context(), g, req.URL); err != nil {
				return nil, err
			}
			return p, nil
		}
		// The proxies' addresses are known up front: the environment is read
		// once. Dialing them bypasses the guard.
		for _, s := range []string{"http://probe.invalid/", "https://probe.invalid/"} {
			u, _ := url.Parse(s)
			if p, err := proxyFunc(u); err == nil && p != nil {
				proxies[canonicalAddr(p)] = true
			}
		}
	}
	f.transport = t
	f.client = &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // redirects are followed by hand
		},
	}
	return f
}

func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443", "socks5": "1080"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// checkProxied judges the target of a request that goes through a proxy:
// the proxy resolves the name, so the guard resolves it here as well and
// refuses a name that leads to a refused address.
func checkProxied(ctx context.Context, g *netguard.Guard, u *url.URL) error {
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return g.CheckName(ctx, host, port)
}

// hostJudge judges a redirect's target host; nil allows it.
type hostJudge func(ctx context.Context, host string) error

// fetch gets req.URL, following at most MaxRedirects redirects, each
// judged by judge when it leads to another host (and by the guard at
// connect time, always).
func (f *fetcher) fetch(ctx context.Context, req fetchRequest, judge hostJudge) (*page, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, req.Timeout, errFetchTimeout)
	defer cancel()
	u := req.URL
	p := &page{}
	for hop := 0; ; hop++ {
		resp, err := f.get(ctx, u, "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.8,*/*;q=0.5")
		if err != nil {
			return nil, f.classify(ctx, u, err, req.Timeout)
		}
		if isRedirect(resp.StatusCode) {
			loc := resp.Header.Get("Location")
			resp.Body.Close()
			if loc == "" {
				return nil, errdefs.Failed("%s answered %d without a Location header", u.Redacted(), resp.StatusCode)
			}
			next, err := u.Parse(loc)
			if err != nil {
				return nil, errdefs.Failed("%s redirects to %q, which is not a valid URL", u.Redacted(), loc)
			}
			if hop >= MaxRedirects {
				return nil, errdefs.Failed("too many redirects (more than %d); the last one leads to %s", MaxRedirects, next.Redacted())
			}
			if err := checkURL(next); err != nil {
				return nil, errdefs.New(errdefs.ErrDenied, "%s redirects to %s, which cannot be fetched: %s", u.Redacted(), next.Redacted(), errdefs.As(err).Msg)
			}
			if !sameSite(hostOf(next), hostOf(u)) && judge != nil {
				if err := judge(ctx, hostOf(next)); err != nil {
					e := errdefs.As(err)
					e.Msg = fmt.Sprintf("%s redirects to %s: %s", u.Redacted(), next.Redacted(), e.Msg)
					return nil, e
				}
			}
			p.Redirects = append(p.Redirects, next.String())
			u = next
			continue
		}
		defer resp.Body.Close()
		p.URL, p.Status = u.String(), resp.StatusCode
		p.ContentType = resp.Header.Get("Content-Type")
		body, truncated, release, err := f.readBody(ctx, resp, req.MaxBytes)
		if err != nil {
			return nil, f.classify(ctx, u, err, req.Timeout)
		}
		p.RawBytes, p.Truncated = len(body), truncated
		convert(p, body, req.Format)
		release() // the body's budget is held until it is converted
		return p, nil
	}
}

// sameSite reports whether a redirect from host a to host b stays where
// the call was authorized: the same host, or the same with "www." added or
// dropped. Anything else is judged again.
func sameSite(a, b string) bool {
	return a == b || strings.TrimPrefix(a, "www.") == strings.TrimPrefix(b, "www.")
}

var errFetchTimeout = errors.New("fetch timeout")

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// get sends one GET without following redirects.
func (f *fetcher) get(ctx context.Context, u *url.URL, accept string) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, errdefs.Invalid("/url", "format", "cannot request %s: %v", u.Redacted(), err)
	}
	hr.Header.Set("User-Agent", f.userAgent)
	hr.Header.Set("Accept", accept)
	hr.Header.Set("Accept-Encoding", "gzip, deflate, br")
	return f.client.Do(hr)
}

// classify turns a transport error into a typed error for the model.
func (f *fetcher) classify(ctx context.Context, u *url.URL, err error, timeout time.Duration) error {
	var be *netguard.BlockedError
	if errors.As(err, &be) {
		return errdefs.Wrap(errdefs.ErrDenied, err, "%s", be.Error())
	}
	if e := errdefs.As(err); e.Class != errdefs.ErrInternal {
		return e
	}
	if errors.Is(context.Cause(ctx), errFetchTimeout) {
		return errdefs.Wrap(errdefs.ErrTimeout, err, "fetching %s did not finish within %s; try a larger timeout (at most %s) or another URL", u.Redacted(), timeout, MaxTimeout)
	}
	if ctx.Err() != nil {
		return errdefs.Wrap(errdefs.ErrCanceled, err, "fetching %s was canceled", u.Redacted())
	}
	return errdefs.Wrap(errdefs.ErrFailed, err, "fetching %s failed: %v", u.Redacted(), unwrapURLError(err))
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// readBody reads at most max decoded bytes of the body (gzip, deflate and
// br are decoded here, so a compression bomb stops at max). truncated
// reports that the body had more. Every decoded byte, and each decoder's
// window, is counted against the daemon-wide budget of fetches in flight
// (budget.go) as it is read; release gives it back (call it once the
// body is no longer needed; it is nil when err is not).
func (f *fetcher) readBody(ctx context.Context, resp *http.Response, max int) (body []byte, truncated bool, release func(), err error) {
	var r io.Reader = resp.Body
	br := f.budget.reader(ctx, nil)
	fail := func(err error) ([]byte, bool, func(), error) {
		br.Release()
		return nil, false, nil, err
	}
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		if err := br.reserve(gzipWindow); err != nil {
			return fail(err)
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return fail(errdefs.Failed("the server sent a broken gzip body: %v", err))
		}
		defer zr.Close()
		r = zr
	case "deflate":
		if err := br.reserve(gzipWindow); err != nil {
			return fail(err)
		}
		r = deflateReader(resp.Body)
	case "br":
		// A brotli stream may ask for a window of up to 16 MiB.
		if err := br.reserve(brotliWindow); err != nil {
			return fail(err)
		}
		r = brotli.NewReader(resp.Body)
	default:
		return fail(errdefs.Failed("the server sent an unsupported content encoding %q", enc))
	}
	br.r = r
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(br, int64(max)+1))
	if err != nil {
		if ctx.Err() != nil {
			return fail(err)
		}
		if errors.Is(err, errdefs.ErrResourceExhausted) {
			return fail(err)
		}
		return fail(errdefs.Wrap(errdefs.ErrFailed, err, "reading the body failed after %d bytes: %v", n, err))
	}
	b := buf.Bytes()
	if len(b) > max {
		return b[:max], true, br.Release, nil
	}
	return b, false, br.Release, nil
}

// Budget taken for a decoder's state before its first byte: gzip and
// deflate keep a 32 KiB window (and tables); brotli up to 16 MiB.
const (
	gzipWindow   = 64 << 10
	brotliWindow = 16 << 20
)

// deflateReader reads "deflate", which servers send as zlib or raw.
func deflateReader(r io.Reader) io.Reader {
	br := bufioReader(r)
	hdr, _ := br.Peek(2)
	if len(hdr) == 2 && hdr[0]&0x0f == 8 && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 {
		if zr, err := zlibReader(br); err == nil {
			return zr
		}
	}
	return flate.NewReader(br)
}

// convert fills p's content from the decoded body in the asked format.
func convert(p *page, body []byte, format string) {
	mt, params, _ := mime.ParseMediaType(p.ContentType)
	mt = strings.ToLower(mt)
	if mt == "" || mt == "application/octet-stream" {
		mt = strings.ToLower(strings.Split(http.DetectContentType(body), ";")[0])
	}
	textual := isTextual(mt)
	if !textual {
		p.Format = "binary"
		p.Content = fmt.Sprintf("The response is binary (%s, %d bytes%s); it is not shown.", orUnknown(mt), len(body), truncNote(p.Truncated))
		return
	}
	text := decodeCharset(body, p.ContentType, params["charset"])
	switch {
	case format == "raw":
		p.Format, p.Content = "raw", text
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		var out bytes.Buffer
		if json.Indent(&out, []byte(text), "", "  ") == nil {
			p.Format, p.Content = "json", out.String()
		} else {
			p.Format, p.Content = "text", text
		}
	case mt == "text/html" || mt == "application/xhtml+xml":
		p.Title, p.Content = htmlContent(text, p.URL, format)
		p.Format = format
	default:
		p.Format, p.Content = "text", text
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

func truncNote(t bool) string {
	if t {
		return ", truncated at max_bytes"
	}
	return ""
}

func isTextual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"):
		return true
	case mt == "application/json", strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"),
		mt == "application/xml", mt == "application/javascript", mt == "application/x-javascript",
		mt == "application/ecmascript", mt == "application/x-yaml", mt == "application/yaml",
		mt == "application/toml", mt == "application/x-sh", mt == "application/sql":
		return true
	}
	return false
}

// decodeCharset returns body as UTF-8: from the charset the header names,
// else a <meta> in the document, else UTF-8 when valid, else a guess;
// invalid bytes become U+FFFD.
func decodeCharset(body []byte, contentType, declared string) string {
	enc, name, _ := charset.DetermineEncoding(body, contentType)
	if declared == "" && utf8.Valid(body) && (name == "windows-1252" || name == "utf-8") {
		// DetermineEncoding falls back to windows-1252 for undeclared text;
		// valid UTF-8 is far more likely.
		return string(body)
	}
	if name == "utf-8" {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return strings.ToValidUTF8(string(out), "\uFFFD")
}

// htmlContent extracts the main content of an HTML document (readability)
// and renders it as Markdown or text; when extraction finds nothing, the
// whole body is converted.
func htmlContent(doc, pageURL, format string) (title, content string) {
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		return "", doc
	}
	u, _ := url.Parse(pageURL)
	parser := readability.NewParser()
	node := root
	if art, err := parser.ParseDocument(root, u); err == nil && art.Node != nil {
		title = art.Title()
		if format == "text" {
			var b strings.Builder
			if art.RenderText(&b) == nil && strings.TrimSpace(b.String()) != "" {
				return title, strings.TrimSpace(b.String())
			}
		} else {
			node = art.Node
		}
	}
	if format == "text" {
		return title, strings.TrimSpace(nodeText(root))
	}
	var opts []converter.ConvertOptionFunc
	if u != nil {
		opts = append(opts, converter.WithDomain(u.Scheme+"://"+u.Host))
	}
	md, err := htmltomarkdown.ConvertNode(node, opts...)
	if err != nil || len(bytes.TrimSpace(md)) == 0 {
		md, err = htmltomarkdown.ConvertNode(root, opts...)
		if err != nil {
			return title, strings.TrimSpace(nodeText(root))
		}
	}
	return title, strings.TrimSpace(string(md))
}

// nodeText is the text of n without scripts and styles.
func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style" || n.Data == "noscript") {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type == html.ElementNode && (n.Data == "p" || n.Data == "div" || n.Data == "br" || n.Data == "li" || strings.HasPrefix(n.Data, "h")) {
			b.WriteByte('\n')
		}
	}
	walk(n)
	return b.String()
}

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }

func zlibReader(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }
