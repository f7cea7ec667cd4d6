package web

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/andybalholm/brotli"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/netguard"
	"github.com/toold/toold/pkg/tools"
)

const article = `<!doctype html><html><head><title>The Title</title><script>var tracking = 1;</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Gophers at work</h1>
<p>Gophers dig tunnels through the <strong>soil</strong> and eat roots. This paragraph is long enough for a readability heuristic to consider it the main content of the page, which it is.</p>
<p>A second paragraph, with a <a href="/more">relative link</a>, keeps the article going for a while so that the extractor is satisfied with the amount of text it found here.</p>
<ul><li>one</li><li>two</li></ul>
</article><footer>Copyright nobody</footer></body></html>`

// pageServer serves the pages the fetch tests use, on loopback; the tool
// under test may reach exactly this server.
func pageServer(t *testing.T) (*Web, string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/article", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(article))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"a":1,"b":[true,null]}`))
	})
	mux.HandleFunc("/png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	})
	mux.HandleFunc("/latin1-header", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=windows-1252")
		w.Write([]byte("caf\xe9 \x80"))
	})
	mux.HandleFunc("/latin1-meta", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><head><meta charset=\"iso-8859-1\"><title>x</title></head><body><p>na\xefve r\xe9sum\xe9</p></body></html>"))
	})
	mux.HandleFunc("/lying-utf8", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("bad \xff\xfe bytes"))
	})
	mux.HandleFunc("/sjis", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=shift_jis")
		w.Write([]byte("\x93\xfa\x96\x7b")) // 日本
	})
	compressed := func(enc string, body []byte) http.HandlerFunc {
		var buf bytes.Buffer
		switch enc {
		case "gzip":
			zw := gzip.NewWriter(&buf)
			zw.Write(body)
			zw.Close()
		case "deflate":
			zw := zlib.NewWriter(&buf)
			zw.Write(body)
			zw.Close()
		case "br":
			bw := brotli.NewWriter(&buf)
			bw.Write(body)
			bw.Close()
		}
		b := buf.Bytes()
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", enc)
			w.Write(b)
		}
	}
	mux.HandleFunc("/gzip", compressed("gzip", []byte("hello gzip")))
	mux.HandleFunc("/deflate", compressed("deflate", []byte("hello deflate")))
	mux.HandleFunc("/br", compressed("br", []byte("hello brotli")))
	// 1 GiB of zeros in about 1 MiB: 1024 gzip members of 1 MiB of zeros
	// each (a gzip stream may hold several members; readers join them).
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "gzip")
		for range 1024 {
			if _, err := w.Write(member.Bytes()); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		line := bytes.Repeat([]byte("x"), 1023)
		line = append(line, '\n')
		for range 50 << 10 { // 50 MiB, unless the client stops reading
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("first bytes"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // until the client gives up
	})
	mux.HandleFunc("/hang-headers", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	mux.HandleFunc("/long", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for i := range 5000 {
			fmt.Fprintf(w, "line %05d ünïcödé\n", i)
		}
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/json", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ap, _ := netip.ParseAddrPort(srv.Listener.Addr().String())
	w := newTool(t, &netguard.Guard{AllowAddrs: []netip.AddrPort{ap}}, Options{Limits: tools.Limits{OutputBytes: 4096}})
	return w, srv.URL
}

func TestFetchFormats(t *testing.T) {
	w, base := pageServer(t)
	for _, c := range []struct {
		path, format string
		want         []string
		not          []string
		wantFormat   string
	}{
		{"/article", "", []string{"Gophers dig tunnels", "**soil**", "- one", "Title: The Title", "(" + base + "/more)"}, []string{"tracking", "<p>", "Copyright nobody"}, "markdown"},
		{"/article", "text", []string{"Gophers dig tunnels through the soil"}, []string{"**", "<p>", "tracking"}, "text"},
		{"/article", "raw", []string{"<article><h1>Gophers", "var tracking"}, nil, "raw"},
		{"/json", "", []string{"{\n  \"a\": 1,\n  \"b\": [\n    true,"}, nil, "json"},
		{"/png", "", []string{"binary (image/png, 16 bytes)"}, []string{"PNG"}, "binary"},
		{"/latin1-header", "", []string{"café €"}, nil, "text"},
		{"/latin1-meta", "", []string{"naïve résumé"}, nil, "markdown"},
		{"/lying-utf8", "", []string{"bad \uFFFD bytes"}, nil, "text"},
		{"/sjis", "", []string{"日本"}, nil, "text"},
		{"/gzip", "", []string{"hello gzip"}, nil, "text"},
		{"/deflate", "", []string{"hello deflate"}, nil, "text"},
		{"/br", "", []string{"hello brotli"}, nil, "text"},
		{"/redirect", "", []string{"\"a\": 1", "redirected 1 time"}, nil, "json"},
		{"/missing", "", []string{"HTTP 404", "error status (404)", "no such page"}, nil, "text"},
	} {
		t.Run(strings.TrimPrefix(c.path, "/")+"-"+c.format, func(t *testing.T) {
			args := map[string]any{"url": base + c.path}
			if c.format != "" {
				args["format"] = c.format
			}
			r, err := w.Run(context.Background(), fetchCall("f", args), nopSink())
			if err != nil {
				t.Fatal(err)
			}
			if !utf8.ValidString(r.Text) {
				t.Fatalf("result is not valid UTF-8: %q", r.Text)
			}
			for _, s := range c.want {
				if !strings.Contains(r.Text, s) {
					t.Errorf("result lacks %q:\n%s", s, r.Text)
				}
			}
			for _, s := range c.not {
				if strings.Contains(r.Text, s) {
					t.Errorf("result has %q:\n%s", s, r.Text)
				}
			}
			if got := r.Structured["format"]; got != c.wantFormat {
				t.Errorf("format %v, want %s", got, c.wantFormat)
			}
		})
	}
}

func TestFetchLimits(t *testing.T) {
	w, base := pageServer(t)
	ctx := context.Background()
	t.Run("gzip bomb stops at max_bytes", func(t *testing.T) {
		r, err := w.Run(ctx, fetchCall("bomb", map[string]any{"url": base + "/bomb", "max_bytes": 1 << 20}), nopSink())
		if err != nil {
			t.Fatal(err)
		}
		if r.Structured["bytes"] != 1<<20 || r.Structured["truncated_body"] != true {
			t.Fatalf("bomb: %v", r.Structured)
		}
		if !strings.Contains(r.Text, "longer than max_bytes") {
			t.Fatalf("no note of the cut: %.200s", r.Text)
		}
	})
	t.Run("huge body stops at max_bytes", func(t *testing.T) {
		r, err := w.Run(ctx, fetchCall("huge", map[string]any{"url": base + "/huge", "max_bytes": 100000}), nopSink())
		if err != nil {
			t.Fatal(err)
		}
		if r.Structured["bytes"] != 100000 || r.Structured["truncated_body"] != true {
			t.Fatalf("huge: %v", r.Structured)
		}
	})
	t.Run("slow body times out", func(t *testing.T) {
		_, err := w.Run(ctx, fetchCall("slow", map[string]any{"url": base + "/slow", "timeout": 0.3}), nopSink())
		if !errors.Is(err, errdefs.ErrTimeout) || !strings.Contains(err.Error(), "did not finish within 300ms") {
			t.Fatalf("slow: %v", err)
		}
	})
	t.Run("no headers times out", func(t *testing.T) {
		_, err := w.Run(ctx, fetchCall("hang", map[string]any{"url": base + "/hang-headers", "timeout": 0.3}), nopSink())
		if !errors.Is(err, errdefs.ErrTimeout) {
			t.Fatalf("hang: %v", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := w.Run(cctx, fetchCall("c", map[string]any{"url": base + "/slow"}), nopSink())
		if !errors.Is(err, errdefs.ErrCanceled) {
			t.Fatalf("canceled: %v", err)
		}
	})
}

// TestFetchKeepsTheWhole: a page longer than the head shown is kept and
// read in pages with read_page, to the last byte.
func TestFetchKeepsTheWhole(t *testing.T) {
	w, base := pageServer(t)
	ctx := context.Background()
	r, err := w.Run(ctx, fetchCall("long-1", map[string]any{"url": base + "/long"}), nopSink())
	if err != nil {
		t.Fatal(err)
	}
	if r.Truncation == nil || r.Truncation.TotalBytes <= r.Truncation.ShownBytes || !strings.Contains(r.Text, `read_page {"call_id": "long-1"`) {
		t.Fatalf("truncation: %+v\n%.300s", r.Truncation, r.Text[max(0, len(r.Text)-300):])
	}
	var all strings.Builder
	off := 0
	for range 100 {
		pr, err := w.Run(ctx, &tools.Call{ID: "rp", ConversationID: "conv", Tool: "web_operations", Operation: "read_page",
			Args: map[string]any{"call_id": "long-1", "offset": off, "limit": 10000}}, nopSink())
		if err != nil {
			t.Fatal(err)
		}
		end := pr.Structured["end"].(int)
		all.WriteString(pr.Text[:end-pr.Structured["offset"].(int)])
		off = end
		if pr.Truncation == nil {
			break
		}
	}
	got := all.String()
	if !strings.HasPrefix(got, "line 00000 ünïcödé\n") || !strings.HasSuffix(got, "line 04999 ünïcödé\n") || strings.Count(got, "\n") != 5000 {
		t.Fatalf("pages do not add up to the page: %d bytes, ends %q", len(got), got[max(0, len(got)-40):])
	}
	// Another conversation cannot read it.
	_, err = w.Run(ctx, &tools.Call{ID: "x", ConversationID: "other", Tool: "web_operations", Operation: "read_page",
		Args: map[string]any{"call_id": "long-1"}}, nopSink())
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("other conversation: %v", err)
	}
}

func TestPageStoreBounded(t *testing.T) {
	s := &pageStore{max: 10}
	if !s.put("c", "1", "aaaa") || !s.put("c", "2", "bbbb") || !s.put("c", "3", "cccc") {
		t.Fatal("put")
	}
	if _, ok := s.get("c", "1"); ok {
		t.Fatal("oldest page kept past the bound")
	}
	if s.put("c", "4", strings.Repeat("x", 11)) {
		t.Fatal("page larger than the store kept")
	}
	if s.size > 10 {
		t.Fatalf("size %d", s.size)
	}
}
