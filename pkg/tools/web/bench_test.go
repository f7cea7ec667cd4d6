package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/netguard"
)

// BenchmarkFetchLocalPage compares web_fetch of a local HTML page (format
// raw: transport only; markdown: with readability and conversion) with
// curl fetching the same page, in the same run. Report ratios, not times.
func BenchmarkFetchLocalPage(b *testing.B) {
	page := strings.Repeat(article, 20) // ~20 KiB of HTML
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	}))
	defer srv.Close()
	ap, _ := netip.ParseAddrPort(srv.Listener.Addr().String())
	w := New(Options{Guard: &netguard.Guard{AllowAddrs: []netip.AddrPort{ap}}})
	defer w.Close()
	for _, format := range []string{"raw", "markdown"} {
		b.Run("web_fetch-"+format, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := w.Run(context.Background(), fetchCall("b", map[string]any{"url": srv.URL + "/", "format": format}), nopSink()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		b.Fatal("curl is required for the baseline")
	}
	b.Run("curl", func(b *testing.B) {
		for b.Loop() {
			if out, err := exec.Command(curl, "-sS", "-o", "/dev/null", "--compressed", srv.URL+"/").CombinedOutput(); err != nil {
				b.Fatalf("curl: %v %s", err, out)
			}
		}
	})
}
