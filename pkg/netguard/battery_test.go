package netguard_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/netguard"
)

type tableResolver struct {
	mu    sync.Mutex
	m     map[string][][]netip.Addr
	calls map[string]int
}

func (r *tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.m[strings.ToLower(strings.TrimSuffix(host, "."))]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := min(r.calls[host], len(a)-1)
	r.calls[host]++
	return a[i], nil
}

// TestProxySSRFBattery: every way a command could ask the egress proxy for
// the machine's own network, as a plain request and as a CONNECT tunnel.
// The internal server counts requests and must get none.
func TestProxySSRFBattery(t *testing.T) {
	internal := serve(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "SECRET") }))
	site := serve(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "public") }))
	ip := portOf(internal.URL)
	sp := portOf(site.URL)
	res := &tableResolver{calls: map[string]int{}, m: map[string][][]netip.Addr{
		"localhost":   {{netip.MustParseAddr("127.0.0.1")}},
		"evil.test":   {{netip.MustParseAddr("127.0.0.1")}},
		"meta.test":   {{netip.MustParseAddr("169.254.169.254")}},
		"mapped.test": {{netip.MustParseAddr("::ffff:127.0.0.1")}},
		"multi.test":  {{netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("127.0.0.1")}},
		"priv.test":   {{netip.MustParseAddr("192.168.0.10")}},
		"again.test":  {{netip.MustParseAddr("127.0.0.1")}},
	}}
	g := &netguard.Guard{Resolver: res, AllowAddrs: []netip.AddrPort{ap(t, site.Server)}, Timeout: 2 * time.Second}
	p := &netguard.Proxy{Guard: g}
	if err := p.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })

	targets := []string{
		"127.0.0.1:" + ip, "127.9.9.9:" + ip, "[::1]:" + ip, "[::ffff:127.0.0.1]:" + ip, "[::127.0.0.1]:" + ip,
		"0.0.0.0:" + ip, "[::]:" + ip, "localhost:" + ip, "LOCALHOST.:" + ip, "evil.test:" + ip, "mapped.test:" + ip,
		"multi.test:" + ip, "169.254.169.254:80", "[fd00:ec2::254]:80", "meta.test:80", "100.100.100.200:80",
		"10.0.0.1:80", "192.168.1.1:80", "priv.test:80", "100.64.0.1:80", "[fe80::1]:80", "[fc00::1]:80",
		"[64:ff9b::7f00:1]:" + ip, "2130706433:" + ip, "again.test:" + ip,
	}
	attempts := 0
	for _, target := range targets {
		for _, mode := range []string{"GET", "CONNECT"} {
			attempts++
			status := proxyRequest(t, p.Addr(), mode, target)
			if status == 200 {
				t.Errorf("%s %s through the proxy: 200", mode, target)
			}
		}
	}
	// The public site works both ways (the battery is not vacuous).
	for _, mode := range []string{"GET", "CONNECT"} {
		if st := proxyRequest(t, p.Addr(), mode, "127.0.0.1:"+sp); st != 200 {
			t.Fatalf("%s to the allowed site: %d", mode, st)
		}
	}
	if n := internal.hits.Load(); n != 0 {
		t.Fatalf("internal server got %d requests", n)
	}
	t.Logf("proxy SSRF battery: %d attempts, all refused", attempts)
}

// proxyRequest sends one request through the proxy and returns its status
// (for CONNECT: the tunnel's, then a GET inside it must not succeed).
func proxyRequest(t *testing.T, proxy, mode, target string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	if mode == "CONNECT" {
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("CONNECT %s: %v", target, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return resp.StatusCode
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
	} else {
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, target)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", mode, target, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
