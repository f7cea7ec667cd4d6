package daemon_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// TestSandboxTCPBetweenConversations (issue 25 item 3): with the default
// configuration, a command of one conversation serves on loopback while a
// command of another conversation tries to reach it — by 127.0.0.1, ::1
// and 0.0.0.0 — and the host's loopback listener; neither is reached
// (the server sees no connection, the host's listener accepts nothing),
// while the first command reaches its own server and the second reaches
// toold's egress proxy.
func TestSandboxTCPBetweenConversations(t *testing.T) {
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
	client := `import socket, os, sys
port, host_port = int(open("a-port").read()), int(sys.argv[1])
for label, addr, p in (("v4", "127.0.0.1", port), ("v6", "::1", port), ("any", "0.0.0.0", port), ("host", "127.0.0.1", host_port)):
    try:
        socket.create_connection((addr, p), timeout=30)
        print("REACHED", label)
    except OSError as e:
        print("refused", label, e.errno)
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
	res, _ := b.call("cl", "run_command", jsonArgs(map[string]any{"command": "python3 client.py " + strconv.Itoa(host.Addr().(*net.TCPAddr).Port) + " 2>&1", "timeout": 120}))
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
	if strings.Contains(bout, "REACHED") || !strings.Contains(aout, "pending 0") {
		t.Errorf("conversation B reached conversation A's server:\nA:\n%s\nB:\n%s", aout, bout)
	}
	if n := hostHits.Load(); n > 0 {
		t.Errorf("the host's loopback listener accepted %d connections from the sandbox", n)
	}
	for _, want := range []string{"refused v4 13", "refused v6 13", "refused any 13", "refused host ", "proxy answered HTTP/1."} {
		if !strings.Contains(bout, want) {
			t.Errorf("want %q in B's output:\n%s", want, bout)
		}
	}
	if !strings.Contains(aout, "own True") {
		t.Errorf("conversation A could not reach its own server:\n%s", aout)
	}
}

// serverEnded is how conversation A's server command ended.
type serverEnded struct {
	res *pb.ToolResult
	err error
}

// serveInConversation runs `python3 server.py` (written to ws by the
// caller) as conversation A's run_command and waits until it has written
// ws/a-port; the channel receives how the command ended.
func serveInConversation(t *testing.T, d *daemontest.Daemon, ws string) <-chan serverEnded {
	t.Helper()
	a := newSession(t, d)
	aEnd := make(chan serverEnded, 1)
	if err := a.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "srv", Name: "run_command",
		Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: jsonArgs(map[string]any{"command": "python3 server.py 2>&1", "timeout": 120})}}}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			ev, err := a.s.Recv()
			if err != nil {
				aEnd <- serverEnded{err: err}
				return
			}
			if e := ev.GetEnd(); e != nil && ev.GetCallId() == "srv" {
				aEnd <- serverEnded{res: e.GetResult()}
				return
			}
		}
	}()
	testenv.Poll(t, time.Minute, "conversation A's server listening", func() bool {
		_, err := os.Stat(filepath.Join(ws, "a-port"))
		return err == nil
	})
	return aEnd
}
