package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/netguard"
)

// TestSSRFBattery makes every attempt a hostile model (or a hostile page
// redirecting it) could make to reach the machine's own network through
// web_fetch. Loopback servers stand in for internal services: the canary
// counts every request it gets and must get none. The origin server is
// the only address the test guard lets through (AllowAddrs, exactly its
// address and port), as a public site would be.
func TestSSRFBattery(t *testing.T) {
	can := newCanary(t, "127.0.0.1:0")
	cp := can.port()
	// A second canary on another loopback address, on the origin's port,
	// for DNS rebinding: the same name and port, a different address.
	var originHits atomic.Int64
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		originHits.Add(1)
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		if n := r.URL.Query().Get("chain"); n != "" {
			var k int
			fmt.Sscan(n, &k)
			to := r.URL.Query().Get("end")
			if k > 1 {
				to = fmt.Sprintf("/?chain=%d&end=%s", k-1, url.QueryEscape(to))
			}
			http.Redirect(w, r, to, http.StatusMovedPermanently)
			return
		}
		w.Write([]byte("public page"))
	}))
	origin.Start()
	t.Cleanup(origin.Close)
	oap := addrPort(t, origin)
	op := fmt.Sprint(oap.Port())
	rebindCanary := newCanary(t, "127.0.0.2:"+op)

	res := &fakeResolver{}
	res.set("public.test", addrs("127.0.0.1"))
	res.set("localhost", addrs("127.0.0.1", "::1"))
	res.set("evil.test", addrs("127.0.0.1"))
	res.set("private.test", addrs("10.0.0.7"))
	res.set("multi.test", addrs("10.1.2.3", "127.0.0.1"))
	res.set("meta.test", addrs("169.254.169.254"))
	res.set("meta6.test", addrs("fd00:ec2::254"))
	res.set("mapped.test", addrs("::ffff:127.0.0.1"))
	res.set("v6loop.test", addrs("::1"))
	res.set("cgnat.test", addrs("100.64.0.9"))
	res.set("zero.test", addrs("0.0.0.0"))
	// First lookup: the origin's address; every later one: the canary's.
	res.set("rebind.test", addrs("127.0.0.1"), addrs("127.0.0.2"))
	g := &netguard.Guard{Resolver: res, AllowAddrs: []netip.AddrPort{oap}}
	w := newTool(t, g, Options{})

	o := "http://127.0.0.1:" + op
	redir := func(to string) string { return o + "/?to=" + url.QueryEscape(to) }
	attempts := []struct {
		url  string
		want error // errdefs class; nil means any failure
	}{
		// Direct addresses.
		{"http://127.0.0.1:" + cp + "/", errdefs.ErrDenied},
		{"http://127.1.2.3:" + cp + "/", errdefs.ErrDenied},
		{"http://[::1]:" + cp + "/", errdefs.ErrDenied},
		{"http://[::ffff:127.0.0.1]:" + cp + "/", errdefs.ErrDenied},
		{"http://[::ffff:7f00:1]:" + cp + "/", errdefs.ErrDenied},
		{"http://[::127.0.0.1]:" + cp + "/", errdefs.ErrDenied},
		{"http://[64:ff9b::7f00:1]:" + cp + "/", errdefs.ErrDenied},
		{"http://[2002:7f00:1::1]:" + cp + "/", errdefs.ErrDenied},
		{"http://0.0.0.0:" + cp + "/", errdefs.ErrDenied},
		{"http://[::]:" + cp + "/", errdefs.ErrDenied},
		{"http://169.254.169.254/latest/meta-data/iam/security-credentials/", errdefs.ErrDenied},
		{"http://169.254.170.2/v2/credentials", errdefs.ErrDenied},
		{"http://[fd00:ec2::254]/latest/meta-data/", errdefs.ErrDenied},
		{"http://[::ffff:169.254.169.254]/", errdefs.ErrDenied},
		{"http://100.100.100.200/latest/meta-data/", errdefs.ErrDenied},
		{"http://10.0.0.1/", errdefs.ErrDenied},
		{"http://172.16.5.4/", errdefs.ErrDenied},
		{"http://192.168.1.1/", errdefs.ErrDenied},
		{"http://100.64.0.1/", errdefs.ErrDenied},
		{"http://224.0.0.1/", errdefs.ErrDenied},
		{"http://255.255.255.255/", errdefs.ErrDenied},
		{"http://[fe80::1%25lo]:" + cp + "/", errdefs.ErrDenied},
		{"http://[fc00::1]/", errdefs.ErrDenied},
		{"http://[ff02::1]/", errdefs.ErrDenied},
		// Names that resolve to refused addresses.
		{"http://localhost:" + cp + "/", errdefs.ErrDenied},
		{"http://LOCALHOST.:" + cp + "/", errdefs.ErrDenied},
		{"http://evil.test:" + cp + "/", errdefs.ErrDenied},
		{"http://private.test/", errdefs.ErrDenied},
		{"http://multi.test:" + cp + "/", errdefs.ErrDenied},
		{"http://meta.test/", errdefs.ErrDenied},
		{"http://meta6.test/", errdefs.ErrDenied},
		{"http://mapped.test:" + cp + "/", errdefs.ErrDenied},
		{"http://v6loop.test:" + cp + "/", errdefs.ErrDenied},
		{"http://cgnat.test/", errdefs.ErrDenied},
		{"http://zero.test:" + cp + "/", errdefs.ErrDenied},
		// Spellings that are no address and no name.
		{"http://2130706433:" + cp + "/", nil},
		{"http://0x7f.1:" + cp + "/", nil},
		{"http://017700000001:" + cp + "/", nil},
		// Other schemes and credentials.
		{"file:///etc/passwd", errdefs.ErrInvalidArgument},
		{"gopher://127.0.0.1:" + cp + "/", errdefs.ErrInvalidArgument},
		{"ftp://127.0.0.1:" + cp + "/", errdefs.ErrInvalidArgument},
		{"http://public.test@127.0.0.1:" + cp + "/", errdefs.ErrInvalidArgument},
		// A public page redirecting inwards, each hop judged again.
		{redir("http://127.0.0.1:" + cp + "/"), errdefs.ErrDenied},
		{redir("http://localhost:" + cp + "/"), errdefs.ErrDenied},
		{redir("http://[::1]:" + cp + "/"), errdefs.ErrDenied},
		{redir("http://169.254.169.254/latest/meta-data/"), errdefs.ErrDenied},
		{redir("http://evil.test:" + cp + "/"), errdefs.ErrDenied},
		{redir("http://[::ffff:127.0.0.1]:" + cp + "/"), errdefs.ErrDenied},
		{redir("file:///etc/passwd"), errdefs.ErrDenied},
		{redir("gopher://127.0.0.1:" + cp + "/_GET"), errdefs.ErrDenied},
		{o + "/?chain=3&end=" + url.QueryEscape("http://127.0.0.1:"+cp+"/"), errdefs.ErrDenied},
		{o + "/?chain=4&end=" + url.QueryEscape("http://meta.test/"), errdefs.ErrDenied},
		// Too many redirects, even within the allowed origin.
		{o + "/?chain=6&end=/", errdefs.ErrFailed},
		// DNS rebinding: the name first resolves to the origin, then (on the
		// redirect's new connection) to the canary on the same port.
		{"http://rebind.test:" + op + "/?to=" + url.QueryEscape("http://rebind.test:"+op+"/"), errdefs.ErrDenied},
	}
	if len(attempts) < 40 {
		t.Fatalf("battery has %d attempts, want at least 40", len(attempts))
	}
	for i, a := range attempts {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			res, err := w.Run(context.Background(), fetchCall(fmt.Sprint("c", i), map[string]any{"url": a.url, "timeout": 5.0}), nopSink())
			if err == nil {
				t.Fatalf("%s: fetched, want refused; got %q", a.url, res.Text)
			}
			if a.want != nil && !errors.Is(err, a.want) {
				t.Fatalf("%s: error %v (class %v), want %v", a.url, err, errClass(err), a.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("%s: error leaks the canary's body: %v", a.url, err)
			}
		})
	}
	t.Logf("SSRF battery: %d attempts, all refused", len(attempts))
	if n := can.hits.Load() + rebindCanary.hits.Load(); n != 0 {
		t.Fatalf("the internal servers got %d requests", n)
	}
	if originHits.Load() == 0 {
		t.Fatal("the origin was never reached; the redirect attempts proved nothing")
	}
}

// TestGuardAllowsThroughPolicyAndTestOptionOnly: a loopback server is
// reachable only when the guard is told so (a host a policy rule allows,
// or exactly its address in tests); metadata never.
func TestGuardAllowsThroughPolicyAndTestOptionOnly(t *testing.T) {
	can := newCanary(t, "127.0.0.1:0")
	res := &fakeResolver{}
	res.set("intranet.test", addrs("127.0.0.1"))
	res.set("meta.test", addrs("169.254.169.254"))
	allow := func(h string) bool { return h == "intranet.test" || h == "meta.test" || h == "169.254.169.254" }
	w := newTool(t, &netguard.Guard{Resolver: res, AllowPrivate: allow}, Options{})
	ctx := context.Background()

	r, err := w.Run(ctx, fetchCall("a", map[string]any{"url": "http://intranet.test:" + can.port() + "/", "format": "raw"}), nopSink())
	if err != nil || !strings.Contains(r.Text, "SECRET") {
		t.Fatalf("allowed host: %v %v", r, err)
	}
	for _, u := range []string{"http://127.0.0.1:" + can.port() + "/", "http://meta.test/", "http://169.254.169.254/"} {
		if _, err := w.Run(ctx, fetchCall("b", map[string]any{"url": u}), nopSink()); !errors.Is(err, errdefs.ErrDenied) {
			t.Fatalf("%s: %v, want denied", u, err)
		}
	}
	if can.hits.Load() != 1 {
		t.Fatalf("canary hits %d, want 1", can.hits.Load())
	}
}

// TestProxyKeepsTheGuard: with a proxy configured, requests go through it,
// but a target that resolves to a refused address never reaches it.
func TestProxyKeepsTheGuard(t *testing.T) {
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.Write([]byte("via proxy " + r.URL.Host))
	}))
	t.Cleanup(proxy.Close)
	pu, _ := url.Parse(proxy.URL)
	res := &fakeResolver{}
	res.set("public.test", addrs("93.184.215.14"))
	res.set("evil.test", addrs("127.0.0.1"))
	w := newTool(t, &netguard.Guard{Resolver: res}, Options{Proxy: func(*url.URL) (*url.URL, error) { return pu, nil }})
	ctx := context.Background()
	r, err := w.Run(ctx, fetchCall("a", map[string]any{"url": "http://public.test/x", "format": "raw"}), nopSink())
	if err != nil || !strings.Contains(r.Text, "via proxy public.test") {
		t.Fatalf("proxied fetch: %v %v", r, err)
	}
	for _, u := range []string{"http://evil.test/", "http://169.254.169.254/", "http://[::1]/", "http://10.0.0.1/"} {
		if _, err := w.Run(ctx, fetchCall("b", map[string]any{"url": u}), nopSink()); !errors.Is(err, errdefs.ErrDenied) {
			t.Fatalf("%s through the proxy: %v, want denied", u, err)
		}
	}
	if proxied.Load() != 1 {
		t.Fatalf("proxy got %d requests, want 1", proxied.Load())
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		ip   string
		want netguard.Class
	}{
		{"8.8.8.8", ""}, {"2606:4700::1111", ""}, {"::ffff:8.8.8.8", ""}, {"64:ff9b::808:808", ""},
		{"127.0.0.1", netguard.Loopback}, {"::1", netguard.Loopback}, {"::ffff:127.0.0.1", netguard.Loopback},
		{"10.1.1.1", netguard.Private}, {"172.31.255.255", netguard.Private}, {"172.32.0.1", ""},
		{"192.168.0.1", netguard.Private}, {"fd12::1", netguard.Private},
		{"169.254.1.1", netguard.LinkLocal}, {"fe80::1", netguard.LinkLocal},
		{"100.64.0.1", netguard.CGNAT}, {"100.127.255.255", netguard.CGNAT}, {"100.128.0.1", ""},
		{"224.0.0.251", netguard.Multicast}, {"ff02::fb", netguard.Multicast},
		{"0.0.0.0", netguard.Unspecified}, {"::", netguard.Unspecified},
		{"169.254.169.254", netguard.Metadata}, {"::ffff:169.254.169.254", netguard.Metadata},
		{"fd00:ec2::254", netguard.Metadata}, {"100.100.100.200", netguard.Metadata},
		{"::7f00:1", netguard.Embedded}, {"64:ff9b::a00:1", netguard.Embedded}, {"2002:a00:1::", netguard.Embedded},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", netguard.Embedded},
		{"192.0.2.1", netguard.Reserved}, {"240.0.0.1", netguard.Reserved},
	} {
		if got := netguard.Classify(netip.MustParseAddr(c.ip)); got != c.want {
			t.Errorf("Classify(%s) = %q, want %q", c.ip, got, c.want)
		}
	}
}

// TestGuardDialerControl: the Control hook alone (for dialers built
// elsewhere) refuses a loopback connection.
func TestGuardDialerControl(t *testing.T) {
	can := newCanary(t, "127.0.0.1:0")
	d := net.Dialer{Control: (&netguard.Guard{}).Control}
	_, err := d.DialContext(context.Background(), "tcp", can.Listener.Addr().String())
	var be *netguard.BlockedError
	if !errors.As(err, &be) || be.Class != netguard.Loopback {
		t.Fatalf("dial: %v, want a loopback BlockedError", err)
	}
}

// hostRules is a func-field netguard.HostRules.
type hostRules struct {
	allows func(tool, op, host string) bool
}

func (r hostRules) HostRuleAllows(tool, op, host string) bool { return r.allows(tool, op, host) }

// TestRulesOpenPrivateToNamedHost: Options.Rules (the policy's host rules)
// open a loopback server to the host a rule names for web_fetch, and only
// to it; what the Guard itself allows still holds.
func TestRulesOpenPrivateToNamedHost(t *testing.T) {
	can := newCanary(t, "127.0.0.1:0")
	res := &fakeResolver{}
	res.set("intranet.test", addrs("127.0.0.1"))
	res.set("other.test", addrs("127.0.0.1"))
	res.set("guard.test", addrs("127.0.0.1"))
	var asked []string
	rules := hostRules{allows: func(tool, op, host string) bool {
		asked = append(asked, tool+"/"+op)
		return tool == ToolName && op == "web_fetch" && host == "intranet.test"
	}}
	g := &netguard.Guard{Resolver: res, AllowPrivate: func(h string) bool { return h == "guard.test" }}
	w := newTool(t, g, Options{Rules: rules})
	ctx := context.Background()
	for _, host := range []string{"intranet.test", "guard.test"} {
		r, err := w.Run(ctx, fetchCall("a", map[string]any{"url": "http://" + host + ":" + can.port() + "/", "format": "raw"}), nopSink())
		if err != nil || !strings.Contains(r.Text, "SECRET") {
			t.Fatalf("%s: %v %v", host, r, err)
		}
	}
	if _, err := w.Run(ctx, fetchCall("b", map[string]any{"url": "http://other.test:" + can.port() + "/"}), nopSink()); !errors.Is(err, errdefs.ErrDenied) {
		t.Fatalf("other.test: %v, want denied", err)
	}
	if can.hits.Load() != 2 {
		t.Fatalf("canary hits %d, want 2", can.hits.Load())
	}
	for _, a := range asked {
		if a != "web_operations/web_fetch" {
			t.Fatalf("the rules were asked about %s", a)
		}
	}
	if g.AllowPrivate("intranet.test") {
		t.Fatal("New changed the caller's Guard")
	}
}
