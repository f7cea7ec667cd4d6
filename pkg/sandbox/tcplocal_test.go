package sandbox_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// tcpOtherScript is the other command of TestSandboxTCPLoopback: it listens
// on 127.0.0.1 (in a SO_REUSEPORT group), ::1 and 0.0.0.0, tells the test
// its ports, waits for its go, then says how many connections reached its
// listeners meanwhile and connects to its own server.
const tcpOtherScript = `import socket, select
a = socket.socket(); a.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1); a.bind(("127.0.0.1", 0)); a.listen(8)
b = socket.socket(socket.AF_INET6); b.bind(("::1", 0)); b.listen(8)
c = socket.socket(); c.bind(("0.0.0.0", 0)); c.listen(8)
with open("other-ready", "w") as f:
    f.write(" ".join(str(s.getsockname()[1]) for s in (a, b, c)))
with open("other-go") as f:
    f.read()
print("other pending", len(select.select([a, b, c], [], [], 0)[0]))
k = socket.create_connection(("127.0.0.1", a.getsockname()[1]), timeout=10)
print("other own", a.accept()[0] is not None)
`

// tcpMainScript runs servers of its own on 127.0.0.1:0 and [::1]:0 and
// connects to them, then tries the other command's servers every way it
// can (by each address, through 0.0.0.0 and a v4-mapped address, joining
// its SO_REUSEPORT group), the host's loopback listener (argv[2]), the
// proxy's port at another address, and the proxy itself (argv[1]).
const tcpMainScript = `import socket, sys
proxy_port, host_port = int(sys.argv[1]), int(sys.argv[2])
with open("other-ready") as f:
    other = [int(p) for p in f.read().split()]
def own(fam, host):
    s = socket.socket(fam); s.bind((host, 0)); s.listen(1)
    c = socket.create_connection((host, s.getsockname()[1]), timeout=10)
    conn, _ = s.accept(); c.sendall(b"ping")
    print("own", host, conn.recv(4).decode())
own(socket.AF_INET, "127.0.0.1")
own(socket.AF_INET6, "::1")
def dial(label, host, port):
    try:
        socket.create_connection((host, port), timeout=10)
        print("REACHED", label)
    except OSError as e:
        print("refused", label, e.errno)
dial("other-v4", "127.0.0.1", other[0])
dial("other-v6", "::1", other[1])
dial("other-any", "127.0.0.1", other[2])
dial("other-any-via-0", "0.0.0.0", other[2])
dial("other-any-mapped", "::ffff:127.0.0.1", other[2])
r = socket.socket(); r.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1); r.bind(("127.0.0.1", other[0])); r.listen(8)
print("joined the group")
for i in range(8):
    dial("other-reuseport", "127.0.0.1", other[0])
dial("host", "127.0.0.1", host_port)
dial("proxy-port-v6", "::1", proxy_port)
t = socket.create_connection(("127.0.0.1", proxy_port), timeout=10)
t.sendall(b"GET http://example.test/x HTTP/1.0\r\n\r\n")
print(t.recv(4096).decode().split("\r\n\r\n", 1)[-1].strip())
`

// TestSandboxTCPLoopback (issue 25 items 2 and 3): an isolated command
// listens on loopback and connects to its own servers (a test server of
// `go test`, `npm test`, pytest), while the servers of another command in
// the same network namespace (another conversation's) stay out of its
// reach by every address and by joining their SO_REUSEPORT group; the
// host's loopback stays out of reach and the proxy works. The other
// command's listeners see no connection, nor does the host's. The
// command's Landlock domain allows connect only to the proxy's port: its
// own connects work because the supervisor makes them, from outside it.
func TestSandboxTCPLoopback(t *testing.T) {
	isolation(t)
	if err := sandbox.UnixSupervisorSupported(); err != nil {
		testenv.Need(t, err, "a kernel with the seccomp supervisor's needs")
	}
	py, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	c := newCanaries(t)
	for _, f := range []string{"other-ready", "other-go"} {
		if err := unix.Mkfifo(filepath.Join(c.ws, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	proxyLn, proxyPort := proxyStandIn(t)
	// A service on the host's loopback.
	host, hostHits := countingListener(t, "tcp", "127.0.0.1:0")

	pol := c.policy()
	pol.Proxy, pol.NoNetwork, pol.ConnectPorts = proxyLn.Addr().String(), true, []uint16{uint16(proxyPort)}
	shared, err := sandbox.OpenNetns(pol.Proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(script string, args ...string) (*sandbox.Process, <-chan string) {
		spec := c.spec(pol)
		spec.Path, spec.Args = py, append([]string{"python3", "-u", "-c", script}, args...)
		spec.Grace = 500 * time.Millisecond
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(ctx, spec, sandbox.Stdio{Stdout: w, Stderr: w, Netns: shared.File()})
		w.Close()
		if err != nil {
			r.Close()
			t.Fatalf("start: %v", err)
		}
		out := make(chan string, 1)
		go func() { b, _ := io.ReadAll(r); r.Close(); out <- string(b) }()
		return p, out
	}
	op, oout := start(tcpOtherScript)
	defer func() { cancel(); <-op.Done() }()
	p, out := start(tcpMainScript, strconv.Itoa(proxyPort), strconv.Itoa(host.Addr().(*net.TCPAddr).Port))
	exit := p.Exit()
	text := <-out
	t.Log(text)
	if exit.Code != 0 {
		cancel()
		<-op.Done()
		t.Fatalf("exit %s:\n%s\nthe other command:\n%s", exit, text, <-oout)
	}
	if err := os.WriteFile(filepath.Join(c.ws, "other-go"), []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	oexit := op.Exit()
	otext := <-oout
	t.Log(otext)
	if oexit.Code != 0 {
		t.Fatalf("the other command: exit %s:\n%s", oexit, otext)
	}
	if strings.Contains(text, "REACHED") || !strings.Contains(otext, "other pending 0") {
		t.Errorf("a command reached another command's server:\n%s\n%s", text, otext)
	}
	if n := hostHits.Load(); n > 0 {
		t.Errorf("the host's loopback listener accepted %d connections from the sandbox", n)
	}
	for _, want := range []string{
		"own 127.0.0.1 ping", "own ::1 ping",
		"refused other-v4 13", "refused other-v6 13", "refused other-any 13", "refused other-any-via-0 13", "refused other-any-mapped 13",
		"joined the group", "refused other-reuseport 13",
		"refused host ",
		"refused proxy-port-v6 13", "via-proxy",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("want %q in the command's output:\n%s", want, text)
		}
	}
	if !strings.Contains(otext, "other own True") {
		t.Errorf("the other command could not connect to its own server:\n%s", otext)
	}
}

// TestLandlockTCPBindRefused: without namespaces (Landlock alone, where
// the machine cannot isolate) there is no namespace boundary around a
// listener, and without the supervisor nothing tells a command's own
// listener from another's: a command cannot bind TCP at all.
func TestLandlockTCPBindRefused(t *testing.T) {
	if sandbox.LandlockABI() < 4 {
		testenv.Need(t, os.ErrNotExist, "Landlock ABI 4 (TCP rules)")
	}
	py, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	for _, isolated := range []bool{false, true} {
		t.Run(map[bool]string{false: "landlock-only", true: "isolated-unsupervised"}[isolated], func(t *testing.T) {
			c := newCanaries(t)
			pol := &sandbox.Policy{Writable: []string{c.ws, c.tmp}, NoNetwork: true}
			var stdio sandbox.Stdio
			if isolated {
				isolation(t)
				pol = c.policy()
				pol.NoNetwork, pol.NoUnixSupervisor = true, true
				shared, err := sandbox.OpenNetns("")
				if err != nil {
					t.Fatal(err)
				}
				defer shared.Close()
				stdio.Netns = shared.File()
			}
			spec := c.spec(pol)
			spec.Path, spec.Args = py, []string{"python3", "-c", `import socket
for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    try:
        socket.socket(fam).bind((host, 0))
        print("BOUND", host)
    except OSError as e:
        print("refused", host, e.errno)
`}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			stdio.Stdout, stdio.Stderr = w, w
			p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(context.Background(), spec, stdio)
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			if exit := p.Exit(); exit.Code != 0 || !strings.Contains(string(b), "refused 127.0.0.1 13") || !strings.Contains(string(b), "refused ::1 13") {
				t.Fatalf("exit %s:\n%s", exit, b)
			}
		})
	}
}

// tcpConnectLoop connects to a server of its own on 127.0.0.1 argv[1]
// times (connect, accept, close) and prints the mean ns per connect.
const tcpConnectLoop = `import socket, sys, time
n = int(sys.argv[1])
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
addr = s.getsockname()
t = time.perf_counter_ns()
for _ in range(n):
    c = socket.socket(); c.connect(addr); s.accept()[0].close(); c.close()
print((time.perf_counter_ns() - t) // n)
`

// BenchmarkTCPConnectOwn measures connect, accept and close of a TCP
// connection to a command's own server on loopback: outside the sandbox
// (python3 as the command would run it) and in it, where every connect is
// decided by the supervisor (sock_diag of the listeners, the pid
// namespace's /proc for who holds them).
func BenchmarkTCPConnectOwn(b *testing.B) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip(err)
	}
	n := strconv.Itoa(max(b.N, 1000))
	b.Run("host", func(b *testing.B) {
		out, err := exec.Command(py, "-c", tcpConnectLoop, n).Output()
		if err != nil {
			b.Fatal(err)
		}
		ns, _ := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		b.ReportMetric(ns, "ns/connect")
	})
	b.Run("sandbox", func(b *testing.B) {
		if err := sandbox.ProbeIsolation(sandbox.Runner{Args: sandbox.TestHelperArgs}); err != nil {
			b.Skip(err)
		}
		if err := sandbox.UnixSupervisorSupported(); err != nil {
			b.Skip(err)
		}
		ws := b.TempDir()
		spec := sandbox.Spec{Dir: ws, Path: py, Args: []string{"python3", "-c", tcpConnectLoop, n},
			Env: []string{"PATH=" + os.Getenv("PATH")}, Grace: 500 * time.Millisecond,
			Policy: &sandbox.Policy{Isolate: true, Writable: []string{ws}, NoNetwork: true}}
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(context.Background(), spec, sandbox.Stdio{Stdout: w, Stderr: w})
		w.Close()
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(r)
		ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if exit := p.Exit(); exit.Code != 0 || err != nil {
			b.Fatalf("exit %s:\n%s", exit, out)
		}
		b.ReportMetric(ns, "ns/connect")
	})
}

// countingListener listens on network/address outside any sandbox and
// counts the connections it accepts (each closed at once); it is closed
// when the test ends.
func countingListener(t *testing.T, network, address string) (net.Listener, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()
	return ln, &accepted
}

// proxyStandIn serves "via-proxy" over HTTP on a loopback port, standing
// in for toold's egress proxy; it returns the listener (closed when the
// test ends) and its port.
func proxyStandIn(t *testing.T) (net.Listener, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "via-proxy\n")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln, ln.Addr().(*net.TCPAddr).Port
}
