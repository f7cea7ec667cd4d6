package sandbox_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// isolation skips (or, with TOOLD_REQUIRE_PEERS, fails) where this machine
// cannot make namespaces: the rest of the file needs them.
func isolation(t *testing.T) {
	t.Helper()
	if err := sandbox.ProbeIsolation(sandbox.Runner{Args: sandbox.TestHelperArgs}); err != nil {
		testenv.Need(t, err, "namespaces for the sandbox")
	}
}

// canaries is a temp HOME with fake keys, a workspace with a .env, and a
// directory outside the workspace.
type canaries struct {
	home, ws, outside, tmp string
}

const secret = "CANARY-SECRET-7f3a"

func newCanaries(t *testing.T) canaries {
	t.Helper()
	root := t.TempDir()
	c := canaries{home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws"), outside: filepath.Join(root, "outside"), tmp: filepath.Join(root, "tmp")}
	for _, d := range []string{c.home + "/.ssh", c.home + "/.aws", c.ws, c.outside, c.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{c.home + "/.ssh/id_ed25519", c.home + "/.aws/credentials", c.home + "/.netrc", c.ws + "/.env", c.outside + "/keep"} {
		if err := os.WriteFile(f, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c canaries) policy() *sandbox.Policy {
	return &sandbox.Policy{
		Isolate:  true,
		Writable: []string{c.ws, c.tmp},
		Hide:     []string{c.home + "/.ssh", c.home + "/.aws", c.home + "/.netrc", c.ws + "/.env"},
	}
}

func (c canaries) spec(p *sandbox.Policy) sandbox.Spec {
	return sandbox.Spec{Dir: c.ws, Policy: p, Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.home, "TMPDIR=" + c.tmp}}
}

// TestIsolatedReads: the masked secrets read as nothing, in and outside the
// workspace, by path and through a symbolic link; the rest of the file
// system still reads.
func TestIsolatedReads(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	if err := os.Symlink(c.home+"/.ssh/id_ed25519", c.ws+"/link"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	exit, out := run(t, ctx, c.spec(c.policy()), `
cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc .env link 2>&1
ls -a ~/.ssh
head -c 20 /etc/passwd; echo
echo done`)
	if strings.Contains(out, secret) {
		t.Fatalf("a secret was read inside the sandbox:\n%s", out)
	}
	if exit.Code != 0 || !strings.Contains(out, "root:") || !strings.Contains(out, "done") {
		t.Fatalf("exit %v, output:\n%s", exit, out)
	}
}

// TestIsolatedWrites: writes land in the workspace and the temp dir only;
// deleting or writing anything outside fails, even as root, and the masks
// cannot be unmounted.
func TestIsolatedWrites(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	ctx := context.Background()
	exit, out := run(t, ctx, c.spec(c.policy()), fmt.Sprintf(`
echo ok > in-ws && echo ok > "$TMPDIR/in-tmp"
rm -f %[1]s/keep; echo x >> %[1]s/keep; echo x > %[1]s/new; touch ~/.bashrc
umount ~/.ssh; umount -l .env; mount -t tmpfs none %[1]s; mount -o remount,rw /
mknod disk b 8 0
cat ~/.ssh/id_ed25519 .env
true`, c.outside))
	if exit.Code != 0 {
		t.Fatalf("exit %v:\n%s", exit, out)
	}
	if b, err := os.ReadFile(c.outside + "/keep"); err != nil || string(b) != secret+"\n" {
		t.Fatalf("the canary outside the workspace changed: %q %v\n%s", b, err, out)
	}
	for _, p := range []string{c.outside + "/new", c.home + "/.bashrc", c.ws + "/disk"} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s was created from inside the sandbox:\n%s", p, out)
		}
	}
	for _, p := range []string{c.ws + "/in-ws", c.tmp + "/in-tmp"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("a write the sandbox allows failed: %v\n%s", err, out)
		}
	}
	if strings.Contains(out, secret) {
		t.Fatalf("a secret was read after an unmount attempt:\n%s", out)
	}
}

// TestIsolatedProc: toold's processes are not in the sandbox's /proc, and
// the command cannot signal them.
func TestIsolatedProc(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	me := os.Getpid()
	exit, out := run(t, context.Background(), c.spec(c.policy()), fmt.Sprintf(`
ls /proc | grep -c '^[0-9]'
cat /proc/%[1]d/environ /proc/%[1]d/cmdline 2>&1 | head -c 200; echo
kill -0 %[1]d && echo SIGNALLED`, me))
	if exit.Code != 0 && exit.Code != 1 {
		t.Fatalf("exit %v:\n%s", exit, out)
	}
	if strings.Contains(out, "SIGNALLED") || strings.Contains(out, "-test.") {
		t.Fatalf("the sandbox reached toold's process:\n%s", out)
	}
	n := strings.Fields(out)[0]
	if n == "" || len(n) > 1 {
		t.Fatalf("the sandbox sees %s processes, want a handful:\n%s", n, out)
	}
}

// TestIsolatedNetwork: no TCP or UDP to a local listener, no unix socket
// of toold's by path; with a proxy, HTTP reaches it and nothing else.
func TestIsolatedNetwork(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	tcpHits := make(chan struct{}, 8)
	go func() {
		for {
			conn, err := tcp.Accept()
			if err != nil {
				return
			}
			tcpHits <- struct{}{}
			conn.Close()
		}
	}()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	udpHits := make(chan string, 8)
	go func() {
		buf := make([]byte, 512)
		for {
			n, _, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			udpHits <- string(buf[:n])
		}
	}()
	sock := filepath.Join(c.outside, "toold.sock")
	unixLn, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer unixLn.Close()
	unixHits := make(chan struct{}, 8)
	go func() {
		for {
			conn, err := unixLn.Accept()
			if err != nil {
				return
			}
			unixHits <- struct{}{}
			conn.Close()
		}
	}()
	// A stand-in for the egress proxy: it answers every request.
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxied := make(chan string, 8)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied <- r.URL.String()
		io.WriteString(w, "via-proxy\n")
	})}
	go srv.Serve(proxyLn)
	defer srv.Close()

	p := c.policy()
	p.Hide = append(p.Hide, sock)
	p.Proxy = proxyLn.Addr().String()
	tcpAddr, udpAddr := tcp.Addr().(*net.TCPAddr), udp.LocalAddr().(*net.UDPAddr)
	// Per command, and in the namespace toold shares among its commands.
	shared, err := sandbox.OpenNetns(p.Proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	for _, ns := range []*sandbox.Netns{nil, shared} {
		startFn := func(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (*sandbox.Process, error) {
			stdio.Netns = ns.File()
			return sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(ctx, spec, stdio)
		}
		exit, out := runWith(t, func(t *testing.T, ctx context.Context, spec sandbox.Spec, script string) (*sandbox.Process, func() string) {
			return startWith(t, startFn, ctx, spec, script)
		}, context.Background(), c.spec(p), fmt.Sprintf(`
echo leak > /dev/udp/127.0.0.1/%[1]d
echo leak > /dev/tcp/127.0.0.1/%[2]d
python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("%[3]s")' 2>/dev/null && echo UNIX-CONNECTED
exec 3<>/dev/tcp/127.0.0.1/%[4]d && printf 'GET http://example.test/x HTTP/1.0\r\n\r\n' >&3 && cat <&3
true`, udpAddr.Port, tcpAddr.Port, sock, proxyLn.Addr().(*net.TCPAddr).Port))
		if exit.Code != 0 {
			t.Fatalf("exit %v:\n%s", exit, out)
		}
		if !strings.Contains(out, "via-proxy") {
			t.Fatalf("the proxy was not reachable from the sandbox:\n%s", out)
		}
		if got := <-proxied; got != "http://example.test/x" {
			t.Fatalf("the proxy got %q", got)
		}
		select {
		case <-tcpHits:
			t.Fatalf("a TCP connection reached a local listener:\n%s", out)
		case m := <-udpHits:
			t.Fatalf("a UDP datagram reached a local listener: %q\n%s", m, out)
		case <-unixHits:
			t.Fatalf("toold's unix socket was reached:\n%s", out)
		default:
		}
		if strings.Contains(out, "UNIX-CONNECTED") {
			t.Fatalf("connected to the unix socket:\n%s", out)
		}
	}
}

// TestIsolatedForkBomb: a fork bomb ends contained by the command's pids
// limit, and its tree is gone once the call is stopped.
func TestIsolatedForkBomb(t *testing.T) {
	isolation(t)
	lim, err := sandbox.OpenLimits(64, 256<<20)
	if err != nil {
		testenv.Need(t, err, "cgroup pids and memory controllers")
	}
	defer lim.Close()
	c := newCanaries(t)
	p := c.policy()
	// The helper is born in a slot (the daemon's way), with the limits.
	slot, err := lim.Take()
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tok := token(t)
	proc, out := startWith(t, func(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (*sandbox.Process, error) {
		stdio.Slot = slot
		return sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(ctx, spec, stdio)
	}, ctx, c.spec(p), `b() { b | b & }; b 2>/dev/null; sleep 100.`+tok+` 2>/dev/null; echo after`)
	// Wait until the bomb hits the limit: fork starts failing. Forking
	// 60 bashes under -race on two loaded cores took over 10 s.
	testenv.Poll(t, time.Minute, "the bomb to reach its pids limit", func() bool {
		n := 0
		for _, d := range slot.Dirs() {
			b, _ := os.ReadFile(filepath.Join(d, "pids.current"))
			fmt.Sscan(strings.TrimSpace(string(b)), &n)
			if n >= 60 {
				return true
			}
		}
		return false
	})
	proc.Stop()
	select {
	case <-proc.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the fork bomb's tree was not stopped")
	}
	_ = out()
	checkClean(t, tok)
}

// TestIsolatedMemory: a command that allocates past its memory limit does
// not get the memory: the kernel kills the process (cgroup v2, and a v1
// slot once toold's thread has left it), the tree ends on its own, the
// exit says so, and toold is not touched.
func TestIsolatedMemory(t *testing.T) {
	isolation(t)
	lim, err := sandbox.OpenLimits(64, 128<<20)
	if err != nil {
		testenv.Need(t, err, "cgroup pids and memory controllers")
	}
	defer lim.Close()
	slot, err := lim.Take()
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Release()
	c := newCanaries(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proc, out := startWith(t, func(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (*sandbox.Process, error) {
		stdio.Slot = slot
		return sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(ctx, spec, stdio)
	}, ctx, c.spec(c.policy()), `head -c 1G /dev/zero | tail -c 1G > /dev/null && echo ALLOCATED`)
	usage := func() (n int64) {
		for _, d := range slot.Dirs() {
			for _, f := range []string{"memory.max_usage_in_bytes", "memory.peak"} {
				if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
					fmt.Sscan(strings.TrimSpace(string(b)), &n)
				}
			}
		}
		return n
	}
	// No Stop: the kernel ends the allocation.
	select {
	case <-proc.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("the command was held at its memory limit instead of killed (used %d bytes)", usage())
	}
	o := out()
	if strings.Contains(o, "ALLOCATED") {
		t.Fatalf("1 GiB was allocated under a 128 MiB limit:\n%s", o)
	}
	exit := proc.Exit()
	if exit.MemoryLimit != 128<<20 || !strings.Contains(exit.String(), "killed: memory limit 128 MiB") {
		t.Fatalf("exit %+v (%q): want the memory limit named\n%s", exit, exit, o)
	}
	if u := usage(); u > 128<<20 {
		t.Fatalf("the cgroup used %d bytes, over its limit", u)
	}
}

// TestIsolatedStopTree: stopping an isolated command stops its whole tree,
// a process that left its session included.
func TestIsolatedStopTree(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	tok := token(t)
	ctx, cancel := context.WithCancel(context.Background())
	proc, out := start(t, ctx, c.spec(c.policy()), `(setsid sleep 100.`+tok+` &) ; sleep 200.`+tok+`; echo never`)
	waitFor(t, func() bool { return len(survivors(tok)) == 3 }) // bash and two sleeps
	cancel()
	select {
	case <-proc.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the tree was not stopped")
	}
	if !proc.Exit().Stopped {
		t.Fatalf("exit %+v\n%s", proc.Exit(), out())
	}
	if strings.Contains(out(), "never") {
		t.Fatal("the command ran on")
	}
	checkClean(t, tok)
}

// TestIsolatedUnixSockets: a command cannot connect to a unix socket
// outside the sandbox — a listener in a directory outside the workspace,
// a container runtime's socket under /run — once UnixSockets' list is
// masked (as toold does for every command); a socket the command itself
// binds in its workspace and temp dir still works.
func TestIsolatedUnixSockets(t *testing.T) {
	isolation(t)
	py, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	c := newCanaries(t)
	accepted := make(chan string, 4)
	listen := func(path string) {
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- path
				conn.Close()
			}
		}()
	}
	outside := filepath.Join(c.outside, "agent.sock")
	listen(outside)
	targets := []string{outside}
	if run, err := os.MkdirTemp("/run", "toold-test-"); err == nil {
		// A fake container runtime's socket.
		t.Cleanup(func() { os.RemoveAll(run) })
		docker := filepath.Join(run, "docker.sock")
		listen(docker)
		targets = append(targets, docker)
	} else {
		t.Logf("no fake /run/…/docker.sock (%v): only the socket outside the workspace is tried", err)
	}
	p := c.policy()
	p.Hide = append(p.Hide, sandbox.UnixSockets(p.Writable)...)
	for _, target := range targets {
		if !slices.Contains(p.Hide, target) {
			t.Fatalf("UnixSockets(%v) misses %s: %v", p.Writable, target, p.Hide)
		}
	}
	script := `import socket, sys, os, threading
for path in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        print("CONNECTED", path)
    except OSError as e:
        print("refused", path, e)
for d in (os.getcwd(), os.environ["TMPDIR"]):
    own = os.path.join(d, "own.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(own)
    srv.listen(1)
    cl = socket.socket(socket.AF_UNIX)
    cl.connect(own)
    conn, _ = srv.accept()
    cl.sendall(b"ping")
    print("own socket", d == os.getcwd() and "workspace" or "temp", conn.recv(4).decode())
`
	spec := c.spec(p)
	spec.Path, spec.Args = py, append([]string{"python3", "-c", script}, targets...)
	exit, out := runSpec(t, spec)
	if strings.Contains(out, "CONNECTED") {
		t.Fatalf("a socket outside the sandbox was reached:\n%s", out)
	}
	select {
	case path := <-accepted:
		t.Fatalf("the listener at %s accepted a connection from the sandbox:\n%s", path, out)
	default:
	}
	if exit.Code != 0 || !strings.Contains(out, "own socket workspace ping") || !strings.Contains(out, "own socket temp ping") {
		t.Fatalf("exit %s; the command's own sockets must work:\n%s", exit, out)
	}
}

// runSpec runs spec (its own program) through a helper and returns its
// exit and combined output.
func runSpec(t *testing.T, spec sandbox.Spec) (sandbox.Exit, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if spec.Grace == 0 {
		spec.Grace = 500 * time.Millisecond
	}
	p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(context.Background(), spec, sandbox.Stdio{Stdout: w, Stderr: w})
	w.Close()
	if err != nil {
		r.Close()
		t.Fatalf("start: %v", err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	return p.Exit(), string(b)
}

// readOnlyScript tries to change, rename, remove and replace the directory
// ro of the workspace, and to lift its mount; it also writes beside it.
const readOnlyScript = `
echo x >> ro/config; touch ro/new; mkdir ro/sub; rm -f ro/config; rm -rf ro
mv ro moved; mkdir -p ro2 && mv ro2 ro
umount ro; umount -l ro; mount -o remount,rw ro
cat ro/config
echo written > beside
true`

// checkReadOnly asserts that the script above changed nothing in ro and
// that the write beside it was made.
func checkReadOnly(t *testing.T, ws string, exit sandbox.Exit, out string) {
	t.Helper()
	if exit.Code != 0 || !strings.Contains(out, "kept") {
		t.Fatalf("exit %v (the directory must still read):\n%s", exit, out)
	}
	if b, err := os.ReadFile(ws + "/ro/config"); err != nil || string(b) != "kept\n" {
		t.Fatalf("a read-only directory's file changed: %q %v\n%s", b, err, out)
	}
	for _, p := range []string{ws + "/ro/new", ws + "/ro/sub", ws + "/moved"} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s was made from inside the sandbox:\n%s", p, out)
		}
	}
	if _, err := os.Stat(ws + "/beside"); err != nil {
		t.Fatalf("a write beside the read-only directory failed: %v\n%s", err, out)
	}
}

// TestIsolatedReadOnly: a directory of the workspace named in ReadOnly reads
// but cannot be written, renamed, removed, replaced or remounted, even as
// root; the rest of the workspace stays writable.
func TestIsolatedReadOnly(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	if err := os.MkdirAll(c.ws+"/ro", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.ws+"/ro/config", []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// And one deeper: the directories above it cannot be moved either (a
	// nested repository replaced by one of the command's).
	if err := os.MkdirAll(c.ws+"/deep/repo/.git", 0o755); err != nil {
		t.Fatal(err)
	}
	// And a file: a submodule's .git naming its git directory, which a
	// command must not point at a repository of its own.
	if err := os.MkdirAll(c.ws+"/mod", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.ws+"/mod/.git", []byte("gitdir: ../.git/modules/mod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := c.policy()
	p.ReadOnly = []string{c.ws + "/ro", c.ws + "/absent", c.ws + "/deep/repo/.git", c.ws + "/mod/.git"}
	exit, out := run(t, context.Background(), c.spec(p), readOnlyScript+`
mv deep moved-deep; mv deep/repo deep/moved; touch deep/repo/.git/x
echo 'gitdir: ../evil' > mod/.git; rm -f mod/.git; mv mod/.git mod/gone; mv mod moved-mod; umount mod/.git; umount -l mod/.git
true`)
	checkReadOnly(t, c.ws, exit, out)
	for _, q := range []string{"/moved-deep", "/deep/moved", "/deep/repo/.git/x", "/mod/gone", "/moved-mod"} {
		if _, err := os.Lstat(c.ws + q); err == nil {
			t.Fatalf("%s was made from inside the sandbox:\n%s", q, out)
		}
	}
	if b, err := os.ReadFile(c.ws + "/mod/.git"); err != nil || string(b) != "gitdir: ../.git/modules/mod\n" {
		t.Fatalf("a read-only .git file changed: %q %v\n%s", b, err, out)
	}
}
