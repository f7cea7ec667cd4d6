package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/netguard"
	"github.com/toold/toold/pkg/tools"
)

// nopSink discards progress.
func nopSink() *tools.Sink { return &tools.Sink{} }

// fakeResolver answers from a table; a name with several answers lists
// (in turn) what each lookup returns, the last one repeating.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func (r *fakeResolver) set(name string, answers ...[]netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.answers == nil {
		r.answers, r.calls = map[string][][]netip.Addr{}, map[string]int{}
	}
	r.answers[name] = answers
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	a, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := min(r.calls[host], len(a)-1)
	r.calls[host]++
	return a[i], nil
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, x := range s {
		out = append(out, netip.MustParseAddr(x))
	}
	return out
}

// canary is a loopback server nothing may reach: every request counts.
type canary struct {
	*httptest.Server
	hits atomic.Int64
}

func newCanary(t *testing.T, addr string) *canary {
	t.Helper()
	c := &canary{}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	c.Server = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		w.Write([]byte("SECRET internal data"))
	})}}
	c.Start()
	t.Cleanup(c.Close)
	return c
}

func (c *canary) port() string {
	_, p, _ := net.SplitHostPort(c.Listener.Addr().String())
	return p
}

func addrPort(t *testing.T, s *httptest.Server) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

func fetchCall(id string, args map[string]any) *tools.Call {
	return &tools.Call{ID: id, ConversationID: "conv", Tool: "web_operations", Operation: "web_fetch", Args: args}
}

// errClass returns the errdefs class of err's *errdefs.Error, or nil.
func errClass(err error) error {
	var e *errdefs.Error
	if errors.As(err, &e) {
		return e.Class
	}
	return nil
}

func newTool(t *testing.T, g *netguard.Guard, opts Options) *Web {
	t.Helper()
	opts.Guard = g
	w := New(opts)
	t.Cleanup(w.Close)
	return w
}
