package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// The test binary stands in for toold's command helper: the daemons these
// tests start run their commands and sessions through it.
func TestMain(m *testing.M) {
	sandbox.RunHelperIfRequested()
	os.Exit(m.Run())
}

// terminalUnderTest is a pseudo-terminal toolctl runs in, as in a person's
// terminal emulator: toolctl gets the tty side, the test types into and
// reads the screen from the master side.
type terminalUnderTest struct {
	t      *testing.T
	master *os.File
	tty    *os.File
	winch  chan os.Signal
	mu     sync.Mutex
	screen bytes.Buffer
}

func newTerminalUnderTest(t *testing.T, rows, cols int) *terminalUnderTest {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		testenv.Need(t, err, "a pseudo-terminal")
	}
	if err := pty.Setsize(tty, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	tt := &terminalUnderTest{t: t, master: master, tty: tty, winch: make(chan os.Signal, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			tt.mu.Lock()
			tt.screen.Write(buf[:n])
			tt.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { tty.Close(); master.Close(); <-done })
	return tt
}

func (tt *terminalUnderTest) typeKeys(s string) {
	tt.t.Helper()
	if _, err := tt.master.Write([]byte(s)); err != nil {
		tt.t.Fatal(err)
	}
}

// expect waits until the screen shows want after what earlier expects
// consumed.
func (tt *terminalUnderTest) expect(want string) {
	tt.t.Helper()
	if !tt.shows(want, 15*time.Second) {
		tt.t.Fatalf("the screen never showed %q; it shows:\n%q", want, tt.rest())
	}
}

// rest is what the screen shows after what expects consumed.
func (tt *terminalUnderTest) rest() string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.screen.String()
}

// waitSleeping waits until a process runs the command line cmd.
func waitSleeping(t *testing.T, cmd string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			if b, _ := os.ReadFile(p); strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ") == cmd {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process runs %q", cmd)
		}
	}
}

// shows waits up to d until the screen shows want after what earlier
// expects consumed, and consumes it.
func (tt *terminalUnderTest) shows(want string, d time.Duration) bool {
	tt.t.Helper()
	deadline := time.Now().Add(d)
	for {
		tt.mu.Lock()
		s := tt.screen.String()
		i := strings.Index(s, want)
		if i >= 0 {
			tt.screen.Next(i + len(want))
		}
		tt.mu.Unlock()
		if i >= 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// resize changes the window size as a terminal emulator does, and tells
// toolctl (SIGWINCH).
func (tt *terminalUnderTest) resize(rows, cols int) {
	tt.t.Helper()
	if err := pty.Setsize(tt.tty, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err != nil {
		tt.t.Fatal(err)
	}
	tt.winch <- unix.SIGWINCH
}

// runShell runs toolctl with the tty as stdin and stdout, in the
// background; the returned channel yields its result.
func (tt *terminalUnderTest) runShell(ctx context.Context, args ...string) <-chan result {
	var stderr syncBuffer
	a := &app{
		stdin: tt.tty, stdout: tt.tty, stderr: &stderr,
		getenv:        func(string) string { return "" },
		isTerminal:    isTerminal,
		terminalWidth: terminalWidth,
		winch:         tt.winch,
	}
	out := make(chan result, 1)
	go func() {
		code := a.run(ctx, args)
		out <- result{code: code, stderr: stderr.String()}
	}()
	return out
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startShellDaemon(t *testing.T) *daemontest.Daemon {
	home := t.TempDir()
	return daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo" // the agent's calls run without asking
		c.Terminal.Env = map[string]string{"HOME": home, "PS1": `\$ `}
		c.Terminal.SessionArgs = []string{"--norc", "--noprofile", "-i"}
	}))
}

func waitResult(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("toolctl shell did not end")
		return result{}
	}
}

// A person opens a shell: raw mode, an interactive prompt, window size
// changes, Ctrl-C, and the shell's exit status as toolctl's.
func TestShellNew(t *testing.T) {
	t.Parallel()
	d := startShellDaemon(t)
	tt := newTerminalUnderTest(t, 30, 100)
	before, err := unix.IoctlGetTermios(int(tt.tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	done := tt.runShell(t.Context(), "--socket", d.Socket, "shell")
	tok := strconv.FormatInt(time.Now().UnixNano()%1e9, 10) // names this test's sleep
	tt.typeKeys("stty size\r")
	tt.expect("30 100")
	tt.resize(40, 120)
	// The resize travels on its own, beside the keys: ask until the
	// remote terminal has it.
	for deadline := time.Now().Add(15 * time.Second); ; {
		tt.typeKeys("stty size\r")
		if tt.shows("40 120", 500*time.Millisecond) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the remote terminal never got the new size")
		}
	}

	tt.typeKeys(`read -p "Name? " n; echo "hello, $n!"` + "\r")
	tt.expect("Name? ")
	tt.typeKeys("toold\r")
	tt.expect("hello, toold!")

	tt.typeKeys("sleep 100." + tok + "\r")
	waitSleeping(t, "sleep 100."+tok) // in the foreground of the remote terminal
	tt.typeKeys("\x03")               // Ctrl-C reaches the remote program, not toolctl
	tt.typeKeys("echo after-$((40+2))\r")
	tt.expect("after-42")

	tt.typeKeys("exit 5\r")
	r := waitResult(t, done)
	if r.code != 5 || !strings.Contains(r.stderr, "ended: exit code 5") || !strings.Contains(r.stderr, "[attached to sess-") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	after, _ := unix.IoctlGetTermios(int(tt.tty.Fd()), unix.TCGETS)
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("the terminal mode was not restored: lflag %#x, want %#x", after.Lflag, before.Lflag)
	}
}

// A person attaches to an agent's session: the agent's output is
// replayed, what the person types reaches the session the agent reads,
// and detaching leaves the session running.
func TestShellAttachAgentSession(t *testing.T) {
	t.Parallel()
	d := startShellDaemon(t)
	agent := newAgent(t, d.Conn, "agent-conv")
	res := agent.call("create_session", map[string]any{"name": "work"})
	id := res.GetStructured().AsMap()["session_id"].(string)
	agent.call("send_input", map[string]any{"session_id": id, "data": "echo agent-was-$((1+1))\n", "wait_ms": 2000})

	// The session's conversation is the agent's: without its secret
	// nothing of the session is reached.
	for _, secret := range []string{"", strings.Repeat("0", 32)} {
		r := cli{}.run(t, "--socket", d.Socket, "shell", "--session", id, "--secret", secret)
		r.check(t, exitUsage, nil, []string{"PermissionDenied", "conversation_secret", "pass --secret"})
		if strings.Contains(r.stdout+r.stderr, "agent-was") {
			t.Fatalf("the session's output reached a client without the secret:\n%s%s", r.stdout, r.stderr)
		}
	}
	tt := newTerminalUnderTest(t, 24, 80)
	done := tt.runShell(t.Context(), "--socket", d.Socket, "shell", "--session", id, "--secret", agent.secret)
	tt.expect("agent-was-2") // replayed
	tt.typeKeys("echo person-$((3+4))\r")
	tt.expect("person-7")
	out := agent.call("get_output", map[string]any{"session_id": id, "wait_ms": 2000})
	if !strings.Contains(out.GetContent()[0].GetText(), "person-7") {
		t.Errorf("the agent does not see the person's command: %s", out.GetContent()[0].GetText())
	}
	tt.typeKeys("\x1d") // Ctrl-]: detach
	r := waitResult(t, done)
	if r.code != 0 || !strings.Contains(r.stderr, "reattach with: toolctl shell --session "+id) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	list := runAsOperator(t, d, "shell", "--list")
	if !strings.Contains(list.stdout, id) || !strings.Contains(list.stdout, "running") || !strings.Contains(list.stdout, "agent-conv") {
		t.Errorf("list:\n%s%s", list.stdout, list.stderr)
	}
}

// Without a terminal, toolctl shell forwards stdin and, at its end, ends
// the shell it started.
func TestShellPipe(t *testing.T) {
	t.Parallel()
	d := startShellDaemon(t)
	r := cli{stdin: "echo piped-$((5*5))\nexit 3\n"}.run(t, "--socket", d.Socket, "shell")
	if r.code != 3 || !strings.Contains(r.stdout, "piped-25") {
		t.Errorf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
}

// At the end of piped stdin without an exit, the shell toolctl started
// still ends, also when a command is running as the input ends (its
// first Ctrl-D reaches the command, not the shell).
func TestShellPipeEOF(t *testing.T) {
	t.Parallel()
	d := startShellDaemon(t)
	for _, c := range []struct{ stdin, want string }{
		{"echo piped-eof-$((6*7))\n", "piped-eof-42"},
		{"sleep 1; echo after-$((2*3))\n", "after-6"},
		{"cat\n", "[session"},
	} {
		r := cli{stdin: c.stdin}.run(t, "--socket", d.Socket, "shell")
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("stdin %q: exit %d\nstdout %q\nstderr %q", c.stdin, r.code, r.stdout, r.stderr)
		}
	}
}

func TestShellUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"shell", "--detach-key", "x"}, "--detach-key"},
		{[]string{"shell", "--session", "s", "--keep"}, "--session attaches to an existing session"},
		{[]string{"shell", "--replay", "-1"}, "--replay"},
	}
	for _, tt := range tests {
		r := cli{}.run(t, append([]string{"--socket", "/nonexistent/toold.sock"}, tt.args...)...)
		r.check(t, exitUsage, nil, []string{tt.want})
	}
	for key, want := range map[string]byte{"ctrl-]": 0x1d, "ctrl-a": 1, "Ctrl-\\": 0x1c} {
		if got, err := parseDetachKey(key); err != nil || got != want {
			t.Errorf("parseDetachKey(%q) = %#x, %v", key, got, err)
		}
	}
}

// agent is an agent's ExecuteTool stream.
type agent struct {
	t      *testing.T
	s      pb.ToolService_ExecuteToolClient
	n      int
	secret string // the conversation's, from Welcome
}

func newAgent(t *testing.T, conn *grpc.ClientConn, conv string) *agent {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := pb.NewToolServiceClient(conn).ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: conv}}}); err != nil {
		t.Fatal(err)
	}
	ev, err := s.Recv()
	if err != nil || ev.GetWelcome().GetConversationSecret() == "" {
		t.Fatalf("welcome: %v %v", ev, err)
	}
	return &agent{t: t, s: s, secret: ev.GetWelcome().GetConversationSecret()}
}

func (ag *agent) call(name string, args map[string]any) *pb.ToolResult {
	ag.t.Helper()
	ag.n++
	id := "a" + strings.Repeat("x", ag.n)
	b, _ := json.Marshal(args)
	if err := ag.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: name, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: string(b)}}}}); err != nil {
		ag.t.Fatal(err)
	}
	for {
		ev, err := ag.s.Recv()
		if err != nil {
			ag.t.Fatal(err)
		}
		if e := ev.GetEnd(); e != nil && ev.GetCallId() == id {
			if !e.GetResult().GetSuccess() {
				ag.t.Fatalf("%s: %v", name, e.GetResult().GetError())
			}
			return e.GetResult()
		}
	}
}
