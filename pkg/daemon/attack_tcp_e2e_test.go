package daemon_test

// The fifth attack pass on TCP on loopback (issue 25): conversation B's
// command tries to reach conversation A's server by every form of
// connect the seccomp supervisor must see — 127.0.0.2, ::1 with a scope
// id, a v4-mapped address, sendto with MSG_FASTOPEN (an implicit
// connect), a non-blocking connect, from a thread, a forked child and a
// child of a thread, a connect racing a dup2 onto its descriptor — and to
// take A's port with SO_REUSEPORT; and the host's loopback listener,
// with MSG_FASTOPEN too. A's server must see no connection but its own,
// the host's listener none.

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// TestAttackTCPLoopbackForms: see the file's comment.
func TestAttackTCPLoopbackForms(t *testing.T) {
	t.Run("connect", func(t *testing.T) { attackTCPForms(t, "connect") })
	// sendto with MSG_FASTOPEN connects without connect(2), past the
	// supervisor: the sandbox's filter refuses it (EOPNOTSUPP), and the
	// TCP_FASTOPEN_CONNECT option too (attack pass 5 got through before).
	t.Run("fastopen", func(t *testing.T) { attackTCPForms(t, "fastopen") })
}

// attackTCPForms runs the attempts of set: "fastopen" those that send
// with MSG_FASTOPEN, "connect" the others.
func attackTCPForms(t *testing.T, set string) {
	sandboxed(t)
	_, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	var hostHits atomic.Int64
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			hostHits.Add(1)
			c.Close()
		}
	}()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	ws := d.Workspace
	if err := unix.Mkfifo(filepath.Join(ws, "a-go"), 0o600); err != nil {
		t.Fatal(err)
	}
	server := `import socket, select
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0); s.bind(("::", 0)); s.listen(8)
with open("a-port.tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
import os; os.rename("a-port.tmp", "a-port")
with open("a-go") as f:
    f.read()
print("pending", len(select.select([s], [], [], 0)[0]))
c = socket.create_connection(("127.0.0.1", s.getsockname()[1]), timeout=30)
print("own", s.accept()[0] is not None)
`
	client := `import socket, os, sys, threading, ctypes
port, host_port = int(open("a-port").read()), int(sys.argv[1])
def attempt(label, f):
    if ("fastopen" in label) != (sys.argv[2] == "fastopen"): return
    try:
        f()
        print("REACHED", label)
    except OSError as e:
        print("refused", label, e.errno)
def plain(addr, p, fam=socket.AF_INET):
    def f():
        s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(10); s.connect((addr, p) if fam == socket.AF_INET else (addr, p, 0, 0))
    return f
def fastopen(addr, p, fam=socket.AF_INET):
    def f():
        s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(10)
        s.sendto(b"x", socket.MSG_FASTOPEN, (addr, p))
        s.recv(1)
    return f
def scoped():
    s = socket.socket(socket.AF_INET6); s.settimeout(10); s.connect(("::1", port, 0, socket.if_nametoindex("lo")))
def mapped():
    s = socket.socket(socket.AF_INET6); s.settimeout(10); s.connect(("::ffff:127.0.0.1", port, 0, 0))
def in_thread(f):
    def g():
        err = []
        def run():
            try: f()
            except OSError as e: err.append(e)
        t = threading.Thread(target=run); t.start(); t.join()
        if err: raise err[0]
    return g
def in_child(f):
    def g():
        pid = os.fork()
        if pid == 0:
            try: f(); os._exit(0)
            except OSError as e: os._exit(e.errno % 256 or 1)
        _, st = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(st)
        if code: raise OSError(code, "child")
    return g
def nonblocking():
    s = socket.socket(); s.setblocking(False)
    try: s.connect(("127.0.0.1", port))
    except BlockingIOError: pass
    import select; select.select([], [s], [], 10)
    e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if e: raise OSError(e, "so_error")
def dup_race():
    # A connect on a descriptor another thread replaces with dup2 meanwhile.
    a = socket.socket(); b = socket.socket(); a.settimeout(10)
    stop = []
    def swap():
        while not stop:
            try: os.dup2(b.fileno(), a.fileno())
            except OSError: pass
    t = threading.Thread(target=swap); t.start()
    try:
        for i in range(200):
            c = socket.socket(); c.settimeout(2)
            try:
                c.connect(("127.0.0.1", port)); stop.append(1); return
            except OSError: pass
            finally: c.close()
        raise OSError(13, "none")
    finally:
        stop.append(1); t.join()
def reuseport_steal():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(1)
attempt("v4", plain("127.0.0.1", port))
attempt("v4 127.0.0.2", plain("127.0.0.2", port))
attempt("v6", plain("::1", port, socket.AF_INET6))
attempt("v4-mapped", mapped)
attempt("v6 scope id", scoped)
attempt("any", plain("0.0.0.0", port))
attempt("fastopen v4", fastopen("127.0.0.1", port))
attempt("fastopen v6", fastopen("::1", port, socket.AF_INET6))
attempt("thread", in_thread(plain("127.0.0.1", port)))
attempt("child", in_child(plain("127.0.0.1", port)))
attempt("vfork-like child of thread", in_thread(in_child(plain("127.0.0.1", port))))
attempt("nonblocking", nonblocking)
attempt("dup2 race", dup_race)
attempt("reuseport bind", reuseport_steal)
attempt("host", plain("127.0.0.1", host_port))
attempt("host fastopen", fastopen("127.0.0.1", host_port))
proxy = os.environ["HTTP_PROXY"].rsplit(":", 1)
t = socket.create_connection((proxy[0].split("//")[-1], int(proxy[1].strip("/"))), timeout=30)
t.sendall(b"GET http://toold-tcplocal.invalid/ HTTP/1.0\r\n\r\n")
print("proxy answered", t.recv(12).decode())
`
	os.WriteFile(filepath.Join(ws, "server.py"), []byte(server), 0o644)
	os.WriteFile(filepath.Join(ws, "client.py"), []byte(client), 0o644)

	// Conversation A's command runs until the test's go.
	aEnd := serveInConversation(t, d, ws)

	b := newSession(t, d)
	res, _ := b.call("cl", "run_command", jsonArgs(map[string]any{"command": "python3 client.py " + strconv.Itoa(host.Addr().(*net.TCPAddr).Port) + " " + set + " 2>&1", "timeout": 120}))
	bout := res.GetContent()[0].GetText()
	if err := os.WriteFile(filepath.Join(ws, "a-go"), []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	e := <-aEnd
	if e.err != nil {
		t.Fatalf("conversation A's stream: %v", e.err)
	}
	aout := e.res.GetContent()[0].GetText()
	t.Logf("A:\n%s\nB:\n%s", aout, bout)
	reached := strings.Contains(bout, "REACHED") || !strings.Contains(aout, "pending 0")
	if reached {
		t.Errorf("conversation B reached conversation A's server:\nA:\n%s\nB:\n%s", aout, bout)
	}
	if n := hostHits.Load(); n > 0 {
		t.Errorf("the host's loopback listener accepted %d connections from the sandbox", n)
	}
	wants := []string{"refused v4 ", "refused child ", "refused dup2 race ", "refused v4-mapped ", "refused thread "}
	if set == "fastopen" {
		wants = []string{"refused fastopen v4 ", "refused host fastopen "}
	}
	for _, want := range append(wants, "proxy answered HTTP/1.") {
		if !strings.Contains(bout, want) {
			t.Errorf("want %q in B's output:\n%s", want, bout)
		}
	}
	if !strings.Contains(aout, "own True") {
		t.Errorf("conversation A could not reach its own server:\n%s", aout)
	}
}
