package netguard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/toold/toold/pkg/netguard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func need(t *testing.T, bin string) string {
	t.Helper()
	p, err := exec.LookPath(bin)
	if err != nil {
		t.Fatalf("%s is required (make test-deps installs it)", bin)
	}
	return p
}

type counted struct {
	*httptest.Server
	hits atomic.Int64
}

func serve(t *testing.T, tlsOn bool, h http.Handler) *counted {
	t.Helper()
	c := &counted{}
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.hits.Add(1); h.ServeHTTP(w, r) })
	if tlsOn {
		c.Server = httptest.NewTLSServer(wrapped)
	} else {
		c.Server = httptest.NewServer(wrapped)
	}
	t.Cleanup(c.Close)
	return c
}

func ap(t *testing.T, s *httptest.Server) netip.AddrPort {
	a, err := netip.ParseAddrPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// startProxy runs the egress proxy with a guard that lets exactly the
// given servers through (as public sites would be) and a judge that
// denies hosts ending in .denied.
func startProxy(t *testing.T, allowed ...*httptest.Server) *netguard.Proxy {
	t.Helper()
	g := &netguard.Guard{}
	for _, s := range allowed {
		g.AllowAddrs = append(g.AllowAddrs, ap(t, s))
	}
	p := &netguard.Proxy{Guard: g, Judge: func(_ context.Context, host string) error {
		if strings.HasSuffix(host, ".denied") || host == "denied.example" {
			return &netguard.DeniedError{Msg: "host " + host + " is denied by rule no-denied"}
		}
		return nil
	}}
	if err := p.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func curl(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(need(t, "curl"), append([]string{"-sS", "--max-time", "10"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// TestProxyWithCurl: commands (curl here) reach allowed hosts through the
// proxy over http and https (CONNECT); a denied host gets 403 with the
// reason and how to ask; internal addresses are refused by the guard.
func TestProxyWithCurl(t *testing.T) {
	site := serve(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", r.URL.Path) }))
	tlsSite := serve(t, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello over tls") }))
	internal := serve(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "SECRET") }))
	p := startProxy(t, site.Server, tlsSite.Server)
	env := p.Env()

	out, errOut, err := curl(t, env, site.URL+"/page")
	if err != nil || out != "hello from /page" {
		t.Fatalf("http through the proxy: %q %q %v", out, errOut, err)
	}
	out, errOut, err = curl(t, env, "-k", tlsSite.URL+"/")
	if err != nil || out != "hello over tls" {
		t.Fatalf("https through CONNECT: %q %q %v", out, errOut, err)
	}
	// Denied by the host rules: http gets the reason in the body.
	out, _, _ = curl(t, env, "-i", "http://api.denied/x")
	if !strings.Contains(out, "403") || !strings.Contains(out, "denied by rule no-denied") || !strings.Contains(out, "web_fetch") {
		t.Fatalf("denied http: %q", out)
	}
	// https to a denied host: the CONNECT is refused.
	_, errOut, err = curl(t, env, "https://api.denied/")
	if err == nil || !strings.Contains(errOut, "403") {
		t.Fatalf("denied CONNECT: %q %v", errOut, err)
	}
	// The machine's own network: refused by the guard, whatever the name.
	for _, u := range []string{
		internal.URL + "/", "http://localhost:" + portOf(internal.URL) + "/", "http://169.254.169.254/latest/meta-data/",
		"http://[::ffff:127.0.0.1]:" + portOf(internal.URL) + "/", "http://10.0.0.1/",
	} {
		out, _, _ = curl(t, env, "-i", u)
		if !strings.Contains(out, "403") || strings.Contains(out, "SECRET") {
			t.Fatalf("%s through the proxy: %q", u, out)
		}
	}
	_, errOut, err = curl(t, env, "-k", "https://127.0.0.1:"+portOf(internal.URL)+"/")
	if err == nil || !strings.Contains(errOut, "403") {
		t.Fatalf("CONNECT to loopback: %q %v", errOut, err)
	}
	if internal.hits.Load() != 0 {
		t.Fatalf("internal server reached %d times", internal.hits.Load())
	}
}

func portOf(u string) string { return u[strings.LastIndex(u, ":")+1:] }

// TestProxyWithGit: git clones over http through the proxy from an allowed
// host, and a clone from a denied or internal host fails with the proxy's
// reason.
func TestProxyWithGit(t *testing.T) {
	git := need(t, "git")
	src := t.TempDir()
	run := func(dir string, env []string, args ...string) (string, error) {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "hello"},
	} {
		if out, err := run(src, nil, args...); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	bare := filepath.Join(t.TempDir(), "repo.git")
	if out, err := run(src, nil, "clone", "-q", "--bare", src, bare); err != nil {
		t.Fatalf("bare: %v %s", err, out)
	}
	if out, err := run(bare, nil, "update-server-info"); err != nil {
		t.Fatalf("update-server-info: %v %s", err, out)
	}
	// A dumb-http git server.
	site := serve(t, false, http.StripPrefix("/git/", http.FileServer(http.Dir(filepath.Dir(bare)))))
	internal := serve(t, false, http.StripPrefix("/git/", http.FileServer(http.Dir(filepath.Dir(bare)))))
	p := startProxy(t, site.Server)
	var env []string
	for k, v := range p.Env() {
		env = append(env, k+"="+v)
	}
	dst := t.TempDir()
	if out, err := run(dst, env, "clone", "-q", site.URL+"/git/repo.git", "ok"); err != nil {
		t.Fatalf("clone through the proxy: %v %s", err, out)
	}
	if out, _ := run(filepath.Join(dst, "ok"), nil, "log", "--format=%s"); strings.TrimSpace(out) != "hello" {
		t.Fatalf("cloned log: %q", out)
	}
	out, err := run(dst, env, "clone", "-q", "http://code.denied/git/repo.git", "no")
	if err == nil || !strings.Contains(out, "403") {
		t.Fatalf("clone from a denied host: %v %s", err, out)
	}
	out, err = run(dst, env, "clone", "-q", internal.URL+"/git/repo.git", "no2")
	if err == nil || !strings.Contains(out, "403") {
		t.Fatalf("clone from loopback: %v %s", err, out)
	}
	if internal.hits.Load() != 0 || site.hits.Load() == 0 {
		t.Fatalf("hits: internal %d, site %d", internal.hits.Load(), site.hits.Load())
	}
}
