package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/authz"
)

// ptySession is toolctl running with stdin and stderr on a pseudo-terminal,
// and the person at that terminal: what toolctl shows arrives on screen,
// and the person types on the terminal's keyboard.
type ptySession struct {
	t      *testing.T
	master *os.File
	slave  *os.File
	done   chan result

	mu     sync.Mutex
	screen bytes.Buffer
	seen   int // what waitFor has matched up to
}

// startPTY runs toolctl args in the background, its stdin and stderr on a
// new pty, stdout in a buffer.
func startPTY(t *testing.T, ctx context.Context, args ...string) *ptySession {
	t.Helper()
	return startPTYWith(t, ctx, nil, args...)
}

// startPTYWith is startPTY with more environment.
func startPTYWith(t *testing.T, ctx context.Context, extraEnv map[string]string, args ...string) *ptySession {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	s := &ptySession{t: t, master: master, slave: slave, done: make(chan result, 1)}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			s.mu.Lock()
			s.screen.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		slave.Close()
		master.Close()
		<-readDone
	})
	env := map[string]string{"TERM": "xterm"}
	maps.Copy(env, extraEnv)
	var stdout bytes.Buffer
	a := &app{
		stdin:         slave,
		stdout:        &stdout,
		stderr:        slave,
		getenv:        func(k string) string { return env[k] },
		isTerminal:    isTerminal,
		terminalWidth: terminalWidth,
		openTTY: func() (*os.File, error) {
			return os.OpenFile(slave.Name(), os.O_RDWR|syscall.O_NOCTTY, 0)
		},
	}
	go func() {
		code := a.run(ctx, args)
		s.done <- result{code: code, stdout: stdout.String()}
	}()
	return s
}

var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// text is the screen so far without colors and carriage returns.
func (s *ptySession) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.ReplaceAll(ansiEscape.ReplaceAllString(s.screen.String(), ""), "\r", "")
}

// waitFor waits until want appears on the screen after what was waited
// for before.
func (s *ptySession) waitFor(want string) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		text := s.text()
		if i := strings.Index(text[s.seen:], want); i >= 0 {
			s.seen += i + len(want)
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%q did not appear on the terminal:\n%s", want, text)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// typ types keys; "\r" is Enter.
func (s *ptySession) typ(keys string) {
	s.t.Helper()
	if _, err := s.master.Write([]byte(keys)); err != nil {
		s.t.Fatal(err)
	}
}

// wait waits for toolctl to exit; the result's stderr is the screen.
func (s *ptySession) wait() result {
	s.t.Helper()
	select {
	case r := <-s.done:
		// The screen may lag the exit: a marker written after toolctl's
		// last byte arrives after all of them.
		const marker = "\x1b[0m<toolctl exited>"
		if _, err := s.slave.Write([]byte(marker)); err != nil {
			s.t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(s.text(), "<toolctl exited>") {
			if time.Now().After(deadline) {
				s.t.Fatalf("the screen never caught up:\n%s", s.text())
			}
			time.Sleep(5 * time.Millisecond)
		}
		r.stderr = strings.Replace(s.text(), "<toolctl exited>", "", 1)
		if testing.Verbose() {
			s.t.Logf("exit %d\nstdout:\n%s\nterminal:\n%s", r.code, r.stdout, r.stderr)
		}
		return r
	case <-time.After(10 * time.Second):
		s.t.Fatalf("toolctl did not exit; terminal:\n%s", s.text())
	}
	return result{}
}

// termMode returns the terminal's local mode flags.
func (s *ptySession) termMode() uint32 {
	s.t.Helper()
	tio, err := unix.IoctlGetTermios(int(s.slave.Fd()), unix.TCGETS)
	if err != nil {
		s.t.Fatal(err)
	}
	return tio.Lflag
}

// TestCallApprovalTerminal is a person at a terminal answering approvals:
// y runs the call once, a grants the conversation what the scope says (and
// a later call there runs without asking), n denies with a reason the model
// gets; Ctrl-C cancels the call.
func TestCallApprovalTerminal(t *testing.T) {
	t.Parallel()
	d, pol, g := startGuarded(t)
	call := func(conv string) []string {
		return []string{"--socket", d.Socket, "call", "guarded", "command=rm -rf build", "--conversation", conv}
	}
	prompt := []string{
		"approval needed (high risk): Run guarded: rm -rf build",
		"  reason:   rm deletes files (rule ask-rm)",
		"            ask   rm -rf build  rule ask-rm",
		"  writes:   src/main.go",
		"    +line 37\n    … 8 more lines\n",
		"[y] once  [a] for this conversation: guarded under src/ for 5m  [n] deny\napprove? ",
	}

	t.Run("y approves once", func(t *testing.T) {
		s := startPTY(t, t.Context(), call("conv-y")...)
		s.waitFor("approve? ")
		if mode := s.termMode(); mode&(unix.ICANON|unix.ECHO) != 0 || mode&unix.ISIG == 0 {
			t.Errorf("terminal mode %#x while asking: want no ICANON, no ECHO, ISIG kept", mode)
		}
		s.typ("y")
		r := s.wait()
		r.check(t, exitOK, []string{"ran: rm -rf build"}, append(prompt, "approve? y\n✓ approved once\n", "✓ Guarding: rm -rf build"))
		if mode := s.termMode(); mode&(unix.ICANON|unix.ECHO) != unix.ICANON|unix.ECHO {
			t.Errorf("terminal mode %#x after asking: want ICANON and ECHO back", mode)
		}
		if gs := pol.Grants("conv-y"); len(gs) != 0 {
			t.Errorf("grants %v after approving once", gs)
		}
		s.mu.Lock()
		colored := strings.Contains(s.screen.String(), "\x1b[32m+line 1\x1b[0m")
		s.mu.Unlock()
		if !colored {
			t.Error("the diff is not colored on a terminal")
		}
	})

	t.Run("a approves for the conversation", func(t *testing.T) {
		// toolctl keeps the conversation's secret in its state dir, so
		// that the next call joins the conversation.
		state := map[string]string{"XDG_STATE_HOME": t.TempDir()}
		s := startPTYWith(t, t.Context(), state, call("conv-a")...)
		s.waitFor("approve? ")
		s.typ("a")
		r := s.wait()
		r.check(t, exitOK, []string{"ran: rm -rf build"}, []string{"approve? a\n✓ approved for this conversation (conv-a): guarded under src/ for 5m\n"})
		gs := pol.Grants("conv-a")
		if len(gs) != 1 {
			t.Fatalf("grants %v, want one", gs)
		}
		want := authz.Scope{ID: "conv", Conversation: true, Tool: "guarded", Operation: "guarded", PathPrefix: "src/", TTL: 5 * time.Minute, Description: "guarded under src/ for 5m"}
		if gr := gs[0]; gr.Scope != want || gr.Once || gr.ExpiresAt.Sub(gr.CreatedAt) != 5*time.Minute || gr.GrantedBy != "toolctl/"+version {
			t.Errorf("grant %+v, want scope %+v for 5m by toolctl", gr, want)
		}
		// The grant lets the next call of the conversation run unasked,
		// even with nobody at a terminal.
		r = cli{env: state}.run(t, "--socket", d.Socket, "call", "guarded", "command=rm -rf dist", "--conversation", "conv-a")
		r.check(t, exitOK, []string{"ran: rm -rf dist"}, nil)
		fi, err := os.Stat(filepath.Join(state["XDG_STATE_HOME"], "toolctl", "conversations.json"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("secrets file: %v %v, want mode 0600", fi, err)
		}
		// Without the secret the conversation (and its grant) is out of
		// reach: the stream is refused and nothing runs.
		before := g.ran.Load()
		r = runAt(t, d.Socket, "call", "guarded", "command=rm -rf dist", "--conversation", "conv-a")
		r.check(t, exitUsage, nil, []string{"PermissionDenied", "conversation_secret", "pass --secret"})
		if g.ran.Load() != before {
			t.Error("a call ran in a conversation joined without its secret")
		}
		if strings.Contains(r.stderr, "approval") {
			t.Errorf("the granted call asked:\n%s", r.stderr)
		}
	})

	t.Run("n denies with a reason", func(t *testing.T) {
		before := g.ran.Load()
		s := startPTY(t, t.Context(), call("conv-n")...)
		s.waitFor("approve? ")
		s.typ("x")
		s.waitFor("press y, a or n\napprove? ") // keys typed before the prompt do not count
		s.typ("n")
		s.waitFor("reason (optional): ")
		s.typ("not on a Friday\r")
		r := s.wait()
		r.check(t, exitFailure, nil, []string{
			"reason (optional): not on a Friday\n✗ denied: not on a Friday\n",
			"error: REJECTED_BY_USER: the user rejected this call: not on a Friday",
		})
		if g.ran.Load() != before {
			t.Error("the denied call ran")
		}
	})

	t.Run("ctrl-c cancels the call", func(t *testing.T) {
		ctx, interrupt := context.WithCancel(t.Context())
		defer interrupt()
		s := startPTY(t, ctx, call("conv-c")...)
		s.waitFor("approve? ")
		interrupt() // what the first Ctrl-C does
		r := s.wait()
		r.check(t, exitFailure, nil, []string{"canceling the call (press Ctrl-C again to quit)", "error: CANCELED: "})
		if mode := s.termMode(); mode&(unix.ICANON|unix.ECHO) != unix.ICANON|unix.ECHO {
			t.Errorf("terminal mode %#x after Ctrl-C: want ICANON and ECHO back", mode)
		}
	})

	t.Run("json keeps prompts on stderr", func(t *testing.T) {
		s := startPTY(t, t.Context(), append(call("conv-j"), "--json")...)
		s.waitFor("approve? ")
		s.typ("y")
		r := s.wait()
		r.check(t, exitOK, []string{`"requiresApproval"`, `"end"`}, []string{"✓ approved once"})
		if strings.Contains(r.stdout, "approve?") {
			t.Errorf("the prompt went to stdout:\n%s", r.stdout)
		}
	})
}

// TestCallQuestionTerminal is a person answering a tool's question at the
// terminal, by the number of a choice.
func TestCallQuestionTerminal(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, nil, nil)
	s := startPTY(t, t.Context(), "--socket", d.Socket, "call", "user_collaboration", "prompt=Which branch?", `choices:=["main","dev"]`)
	s.waitFor("answer: ")
	s.typ("\r")
	s.waitFor("an answer is needed (Ctrl-C cancels the call)\nanswer: ")
	s.typ("2\r")
	r := s.wait()
	r.check(t, exitOK, []string{"User response: dev"}, []string{"question: Which branch?\n  1) main\n  2) dev\nanswer: "})
}

// TestCallArgsFromStdinAsksOnTerminal checks that a call whose arguments
// come on stdin (--args -) still asks on the terminal.
func TestCallArgsFromStdinAsksOnTerminal(t *testing.T) {
	t.Parallel()
	d, _, _ := startGuarded(t)
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	go func() {
		// The person's answer, once asked.
		var screen []byte
		buf := make([]byte, 1024)
		for !bytes.Contains(screen, []byte("approve?")) {
			n, err := master.Read(buf)
			if err != nil {
				return
			}
			screen = append(screen, buf[:n]...)
		}
		_, _ = master.Write([]byte("y"))
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	var stdout bytes.Buffer
	a := &app{
		stdin:         strings.NewReader(`{"command": "rm -rf build"}`),
		stdout:        &stdout,
		stderr:        slave,
		getenv:        func(string) string { return "" },
		isTerminal:    isTerminal,
		terminalWidth: terminalWidth,
		openTTY: func() (*os.File, error) {
			return os.OpenFile(slave.Name(), os.O_RDWR|syscall.O_NOCTTY, 0)
		},
	}
	if code := a.run(t.Context(), []string{"--socket", d.Socket, "call", "guarded", "--args", "-"}); code != exitOK || stdout.String() != "ran: rm -rf build\n" {
		t.Errorf("exit %d, stdout %q", code, stdout.String())
	}
}

// TestCallTerminalCannotOpen checks that a terminal that cannot be opened
// is reported with the denial.
func TestCallTerminalCannotOpen(t *testing.T) {
	t.Parallel()
	d, _, _ := startGuarded(t)
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	var stdout, stderr bytes.Buffer
	a := &app{
		stdin:         slave,
		stdout:        &stdout,
		stderr:        &stderr,
		getenv:        func(string) string { return "" },
		isTerminal:    func(io.Writer) bool { return true },
		terminalWidth: func(io.Writer) int { return 0 },
		openTTY:       func() (*os.File, error) { return nil, errors.New("open /dev/tty: no such device") },
	}
	code := a.run(t.Context(), []string{"--socket", d.Socket, "call", "guarded", "command=rm x"})
	r := result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	r.check(t, exitFailure, nil, []string{"denied: cannot ask on the terminal (open /dev/tty: no such device); pass --yes"})
}
