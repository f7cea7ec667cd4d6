package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/netguard"
	"github.com/toold/toold/pkg/tools"
)

// bombServer serves decompression bombs: /gzip is 1 GiB of zeros in about
// 1 MiB of gzip, /br 1 GiB of zeros in brotli with a 16 MiB window.
var bombs struct {
	sync.Once
	gzipMember, brotli bytes.Buffer
}

func bombServer(t *testing.T, fetchMemory int64) (*Web, string) {
	t.Helper()
	bombs.Do(func() {
		zw, _ := gzip.NewWriterLevel(&bombs.gzipMember, gzip.BestCompression)
		zw.Write(make([]byte, 1<<20))
		zw.Close()
		bw := brotli.NewWriterOptions(&bombs.brotli, brotli.WriterOptions{Quality: 1, LGWin: 24})
		bw.Write(make([]byte, 16<<20))
		bw.Close()
	})
	member, bomb := &bombs.gzipMember, &bombs.brotli
	mux := http.NewServeMux()
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		for range 1024 {
			if _, err := w.Write(member.Bytes()); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/br", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "br")
		w.Write(bomb.Bytes())
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ap, _ := netip.ParseAddrPort(srv.Listener.Addr().String())
	w := newTool(t, &netguard.Guard{AllowAddrs: []netip.AddrPort{ap}}, Options{
		Limits: tools.Limits{OutputBytes: 4096}, FetchMemory: fetchMemory, KeepBytes: 4 << 20,
	})
	return w, srv.URL
}

// liveHeap returns the bytes of live and not yet collected heap objects.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Issue 25 item 5: 40 concurrent decompression bombs keep toold's heap
// bounded by the fetch budget. Each fetch asks for 8 MiB (320 MiB in all,
// about three times that in buffers and converted text without a budget);
// the budget is 48 MiB. Every fetch either returns its page cut at
// max_bytes or fails RESOURCE_EXHAUSTED saying why; the heap, sampled
// throughout, never grows by more than three times the budget (what the
// budget counts, and garbage not yet collected) plus the pages kept for
// read_page and a margin (it grew by about 106 MiB here; with no budget,
// by 1.3 GiB); and the whole budget is free afterwards.
func TestFetchBudgetBoundsConcurrentBombs(t *testing.T) {
	const budgetBytes = 48 << 20
	w, base := bombServer(t, budgetBytes)
	runtime.GC()
	base0 := liveHeap()
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if h := liveHeap(); h > peak {
				peak = h
			}
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, exhausted := 0, 0
	var other []error
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/gzip"
			if i%4 == 3 {
				path = "/br"
			}
			r, err := w.Run(context.Background(), fetchCall("b", map[string]any{"url": base + path, "max_bytes": 8 << 20, "timeout": 60}), nopSink())
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && r.Structured["truncated_body"] == true:
				ok++
			case errors.Is(err, errdefs.ErrResourceExhausted) && strings.Contains(err.Error(), "memory budget"):
				exhausted++
			default:
				other = append(other, err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	if len(other) > 0 || ok == 0 {
		t.Fatalf("%d pages, %d RESOURCE_EXHAUSTED, other outcomes: %v", ok, exhausted, other)
	}
	grew := int64(peak) - int64(base0)
	// The heap holds garbage until the collector runs (GOGC lets it reach
	// about twice what is live), hence the factor.
	limit := int64(3*budgetBytes + 4<<20 + 32<<20)
	t.Logf("%d pages, %d RESOURCE_EXHAUSTED; the heap grew by at most %.1f MiB (limit %.1f MiB)", ok, exhausted, float64(grew)/(1<<20), float64(limit)/(1<<20))
	if grew > limit {
		t.Fatalf("the heap grew by %.1f MiB under 40 concurrent bombs; the bound is %.1f MiB", float64(grew)/(1<<20), float64(limit)/(1<<20))
	}
	if u := w.fetch_.budget.Used(); u != 0 {
		t.Fatalf("%d bytes of budget are still held after every fetch ended", u)
	}
}

// A fetch that needs more than the whole budget fails RESOURCE_EXHAUSTED
// and says why; the budget is given back.
func TestFetchBudgetExhausted(t *testing.T) {
	w, base := bombServer(t, 1<<20)
	_, err := w.Run(context.Background(), fetchCall("b", map[string]any{"url": base + "/gzip", "max_bytes": 8 << 20}), nopSink())
	if !errors.Is(err, errdefs.ErrResourceExhausted) || !strings.Contains(err.Error(), "1.0 MiB") || !strings.Contains(err.Error(), "max_bytes") {
		t.Fatalf("err = %v, want RESOURCE_EXHAUSTED naming the budget", err)
	}
	if u := w.fetch_.budget.Used(); u != 0 {
		t.Fatalf("the failed fetch kept %d bytes of budget", u)
	}
}
