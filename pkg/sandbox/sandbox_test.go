package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// The test binary stands in for toold as the helper.
func TestMain(m *testing.M) {
	sandbox.RunHelperIfRequested()
	if tok := os.Getenv(cgroupChildEnv); tok != "" {
		cgroupChild(tok)
	}
	if mode := os.Getenv(cgroupProbeEnv); mode != "" {
		cgroupProbe(mode)
	}
	if v := os.Getenv(fakeDaemonEnv); v != "" {
		tok, dir, _ := strings.Cut(v, ":")
		fakeDaemon(tok, dir)
	}
	code := m.Run()
	if cgroups != nil {
		cgroups.Close()
	}
	// A warm helper's command ends at its report, and the helper is
	// reaped in the background (Process.Reaped): give a reaping that is
	// under way its moment; a child nobody reaps stays a zombie.
	var z []int
	testenv.Until(10*time.Second, func() bool { z = sandbox.ZombieChildren(os.Getpid()); return len(z) == 0 })
	if len(z) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "zombie children left after the tests: %v\n", z)
		code = 1
	}
	os.Exit(code)
}

// starter starts script under bash (start: through a helper; cgStart: in
// a cgroup) and returns the process and a function that returns its whole
// output once the process is done.
type starter func(t *testing.T, ctx context.Context, spec sandbox.Spec, script string) (*sandbox.Process, func() string)

// run runs script under bash through a helper and returns its exit and
// combined output.
func run(t *testing.T, ctx context.Context, spec sandbox.Spec, script string) (sandbox.Exit, string) {
	t.Helper()
	return runWith(t, start, ctx, spec, script)
}

// runWith runs script with s and waits for it.
func runWith(t *testing.T, s starter, ctx context.Context, spec sandbox.Spec, script string) (sandbox.Exit, string) {
	t.Helper()
	p, out := s(t, ctx, spec, script)
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not end")
	}
	return p.Exit(), out()
}

// start starts script under bash through a helper.
func start(t *testing.T, ctx context.Context, spec sandbox.Spec, script string) (*sandbox.Process, func() string) {
	t.Helper()
	return startWith(t, sandbox.Runner{Args: sandbox.TestHelperArgs}.Start, ctx, spec, script)
}

// startWith starts script under bash with startFn, its output in a pipe.
func startWith(t *testing.T, startFn func(context.Context, sandbox.Spec, sandbox.Stdio) (*sandbox.Process, error), ctx context.Context, spec sandbox.Spec, script string) (*sandbox.Process, func() string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	spec.Path, spec.Args = "/bin/bash", []string{"bash", "-c", script}
	if spec.Env == nil {
		spec.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	}
	if spec.Grace == 0 {
		spec.Grace = 500 * time.Millisecond
	}
	p, err := startFn(ctx, spec, sandbox.Stdio{Stdout: w, Stderr: w})
	w.Close()
	if err != nil {
		r.Close()
		t.Fatalf("start: %v", err)
	}
	var buf bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&buf, r); r.Close(); close(copied) }()
	return p, func() string { <-p.Done(); <-copied; return buf.String() }
}

// token returns a string unique to this test run, used in sleep arguments
// ("sleep 100.<token>") so that the process table can be searched for
// survivors.
func token(t *testing.T) string {
	return strconv.Itoa(os.Getpid()) + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
}

// survivors returns the pids whose command line contains tok.
func survivors(tok string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(tok)) {
			out = append(out, pid)
		}
	}
	return out
}

// sleepers returns the pids of the sleep processes whose command line
// contains tok (survivors less the shells that started them).
func sleepers(tok string) []int {
	var out []int
	for _, pid := range survivors(tok) {
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && string(comm) == "sleep\n" {
			out = append(out, pid)
		}
	}
	return out
}

func checkClean(t *testing.T, tok string) {
	t.Helper()
	// Reaping by init or the helper may lag a moment behind the kill.
	deadline := time.Now().Add(2 * time.Second)
	for {
		s := survivors(tok)
		z := sandbox.ZombieChildren(os.Getpid())
		if len(s) == 0 && len(z) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("survivors %v, zombie children %v", s, z)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExit(t *testing.T) {
	tests := []struct {
		name   string
		script string
		code   int
		signal syscall.Signal
		out    string
	}{
		{name: "success", script: "echo hello", code: 0, out: "hello\n"},
		{name: "exit code", script: "echo out; echo err >&2; exit 3", code: 3, out: "out\nerr\n"},
		{name: "signal", script: "kill -TERM $$", code: -1, signal: syscall.SIGTERM},
		{name: "environment is the spec's only", script: `echo "${TOOLD_SECRET-unset}"`, out: "unset\n"},
		{name: "stdin is /dev/null", script: "cat; echo done", out: "done\n"},
	}
	t.Setenv("TOOLD_SECRET", "s3cret")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exit, out := run(t, t.Context(), sandbox.Spec{}, tt.script)
			if exit.Code != tt.code || exit.Signal != tt.signal || exit.Err != nil || exit.Stopped {
				t.Errorf("exit %+v, want code %d signal %v", exit, tt.code, tt.signal)
			}
			if tt.out != "" && out != tt.out {
				t.Errorf("output %q, want %q", out, tt.out)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		runner sandbox.Runner
		spec   sandbox.Spec
		want   string
		is     error
	}{
		{name: "missing working directory", spec: sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Dir: "/nonexistent/dir"},
			want: "working directory /nonexistent/dir"},
		{name: "missing program", spec: sandbox.Spec{Path: "/nonexistent/prog", Args: []string{"prog"}},
			want: "starting /nonexistent/prog"},
		{name: "not a helper", runner: sandbox.Runner{Helper: "/bin/true"}, spec: sandbox.Spec{Path: "/bin/true", Args: []string{"true"}},
			is: sandbox.ErrNotHelper, want: "RunHelperIfRequested"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.runner.Start(t.Context(), tt.spec, sandbox.Stdio{})
			if err == nil {
				p.Stop()
				<-p.Done()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", err, tt.want)
			}
			var se *sandbox.StartError
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			} else if tt.is == nil && !errors.As(err, &se) {
				t.Errorf("error %v (%T) is not a StartError", err, err)
			}
		})
	}
}

// Stopping a tree kills every process in it: children, a grandchild that
// called setsid and was orphaned, and one that ignores SIGTERM (SIGKILL
// after the grace period).
func TestStopKillsWholeTree(t *testing.T) {
	t.Parallel()
	tok := token(t)
	trapped := filepath.Join(t.TempDir(), "trapped")
	script := fmt.Sprintf(`
sleep 100.%[1]s &
setsid sleep 100.%[1]s &
(setsid sleep 100.%[1]s &)
bash -c 'trap "" TERM; touch %[2]s; sleep 100.%[1]s' &
echo ready
sleep 100.%[1]s`, tok, trapped)
	p, out := start(t, t.Context(), sandbox.Spec{Grace: 300 * time.Millisecond}, script)
	// The process that ignores SIGTERM must have set its trap first.
	waitFor(t, func() bool { _, err := os.Stat(trapped); return err == nil })
	// Every process of the tree, the orphaned setsid one included, is
	// below the helper. The tree and the helper's descendants are read one
	// after the other while the script still starts processes, so wait
	// until a reading finds them all (a process outside would never be).
	var d, s []int
	waitForMsg(t, func() bool {
		s = survivors(tok)
		d = sandbox.Descendants(p.HelperPid())
		return len(s) >= 5 && subset(s, d)
	}, func() string { return fmt.Sprintf("the helper has descendants %v; the tree is %v", d, s) })
	begin := time.Now()
	p.Stop()
	<-p.Done()
	exit := p.Exit()
	took := time.Since(begin)
	if !exit.Stopped || exit.Err != nil {
		t.Errorf("exit %+v, want stopped", exit)
	}
	// At least the grace (one process ignores SIGTERM), and far less than
	// the sleeps' 100 s (the grace's SIGKILL ended it, nothing waited).
	if took < 250*time.Millisecond || took > 60*time.Second {
		t.Errorf("stopping took %s; want about the grace period (300ms), as one process ignores SIGTERM", took)
	}
	if !strings.Contains(out(), "ready") {
		t.Errorf("output %q", out())
	}
	checkClean(t, tok)
}

// The context of Start bounds the tree like Stop does.
func TestContextStops(t *testing.T) {
	t.Parallel()
	contextStops(t, start)
}

func contextStops(t *testing.T, s starter) {
	tok := token(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancelled once both sleeps run, not after a fixed time: under load a
	// deadline could pass before the command started, and Start's refusal
	// is not what this tests.
	go func() {
		if testenv.Until(10*time.Second, func() bool { return len(sleepers(tok)) == 2 }) {
			cancel()
		}
	}()
	exit, _ := runWith(t, s, ctx, sandbox.Spec{}, fmt.Sprintf("setsid sleep 100.%s & sleep 100.%[1]s", tok))
	if !exit.Stopped || exit.Signal != syscall.SIGTERM {
		t.Errorf("exit %+v, want stopped by SIGTERM", exit)
	}
	checkClean(t, tok)
}

// What a command leaves running when it exits is stopped: nothing a command
// started outlives it.
func TestLeftoversStopped(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	leftoversStopped(t, start)
	// The leftovers sleep 100 s: an exit long before that means they were
	// stopped, not waited for (a bound no load reaches by luck).
	if took := time.Since(begin); took > 50*time.Second {
		t.Errorf("took %s; leftovers should be stopped at once", took)
	}
}

func leftoversStopped(t *testing.T, s starter) {
	tok := token(t)
	exit, out := runWith(t, s, t.Context(), sandbox.Spec{}, fmt.Sprintf("(setsid sleep 100.%s >/dev/null 2>&1 &); sleep 100.%[1]s & echo started", tok))
	if exit.Code != 0 || exit.Stopped || exit.Leftovers != 2 {
		t.Errorf("exit %+v, want code 0 with 2 leftovers", exit)
	}
	if out != "started\n" {
		t.Errorf("output %q", out)
	}
	checkClean(t, tok)
}

// A terminal's tree gets SIGHUP too: an interactive shell, which ignores
// SIGTERM, ends at once.
func TestTerminalHangup(t *testing.T) {
	t.Parallel()
	ptmx, tty, err := pty.Open()
	if err != nil {
		testenv.Need(t, err, "a pseudo-terminal")
	}
	defer ptmx.Close()
	var screen testenv.Buffer
	go io.Copy(&screen, ptmx)
	spec := sandbox.Spec{Path: "/bin/bash", Args: []string{"bash", "--norc", "--noprofile", "-i"}, Env: []string{"PATH=" + os.Getenv("PATH"), "TERM=dumb", "PS1=ready> "}, Terminal: true, Grace: 5 * time.Second}
	p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(t.Context(), spec, sandbox.Stdio{Stdin: tty, Stdout: tty, Stderr: tty, Terminal: true})
	tty.Close()
	if err != nil {
		t.Fatal(err)
	}
	waitForMsg(t, func() bool { return strings.Contains(screen.String(), "ready> ") }, screen.String) // the shell reads its terminal
	p.Stop()
	<-p.Done()
	// SIGHUP ended it, not the grace's SIGKILL (an interactive shell
	// ignores SIGTERM).
	if exit := p.Exit(); !exit.Stopped || exit.Signal != syscall.SIGHUP {
		t.Errorf("exit %+v, want stopped by SIGHUP", exit)
	}
}

func TestConfine(t *testing.T) {
	t.Parallel()
	if abi := sandbox.LandlockABI(); abi < 6 {
		testenv.Need(t, fmt.Errorf("the kernel has Landlock ABI %d", abi), "Landlock ABI >= 6")
	}
	ws, tmp, home := t.TempDir(), t.TempDir(), t.TempDir()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	etc := "/etc/toold-sandbox-test-" + token(t)
	t.Cleanup(func() { os.Remove(etc) })
	tests := []struct {
		name    string
		network bool
		script  string
		ok      bool
	}{
		{name: "write in the workspace", script: "echo hi > x && mkdir -p d/e && mv x d/e/y && cat d/e/y", ok: true},
		{name: "write in the temp dir", script: `touch "$TMPDIR/t"`, ok: true},
		{name: "write to /dev/null", script: "echo hi > /dev/null", ok: true},
		{name: "touch in /etc", script: "touch " + etc},
		{name: "write in HOME", script: `echo x > "$HOME/.bashrc"`},
		{name: "move out of the workspace", script: `echo x > f && mv f "$HOME/f"`},
		{name: "no network", script: fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port)},
		{name: "network allowed", network: true, script: fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port), ok: true},
		{name: "signal a process outside", script: fmt.Sprintf("kill -0 %d", os.Getpid())},
		{name: "signal a process inside", script: "sleep 10 & kill $!", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := sandbox.Spec{
				Dir:    ws,
				Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp},
				Policy: &sandbox.Policy{Writable: []string{ws, tmp}, NoNetwork: !tt.network},
			}
			exit, out := run(t, t.Context(), spec, tt.script)
			if got := exit.Code == 0; got != tt.ok {
				t.Errorf("exit %+v (output %q); want success %v", exit, out, tt.ok)
			}
		})
	}
	if _, err := os.Stat(etc); err == nil {
		t.Errorf("%s was created", etc)
	}
	if ents, _ := os.ReadDir(home); len(ents) > 0 {
		t.Errorf("HOME got %v", ents)
	}
	if _, err := os.Stat(filepath.Join(ws, "d", "e", "y")); err != nil {
		t.Errorf("workspace write: %v", err)
	}
}

func TestDescendants(t *testing.T) {
	t.Parallel()
	tok := token(t)
	p, _ := start(t, t.Context(), sandbox.Spec{}, fmt.Sprintf("sleep 100.%s & sleep 100.%[1]s & wait", tok))
	waitFor(t, func() bool { return len(survivors(tok)) == 3 }) // bash and two sleeps
	d := sandbox.Descendants(p.HelperPid())
	if len(d) != 3 || d[0] != p.Pid() {
		t.Errorf("descendants %v, want bash (%d) first, then its two children", d, p.Pid())
	}
	p.Stop()
	<-p.Done()
	checkClean(t, tok)
}

// subset reports whether every element of a is in b.
func subset(a, b []int) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// waitForMsg is waitFor with a message saying what was last seen.
func waitForMsg(t *testing.T, cond func() bool, msg func() string) {
	t.Helper()
	if !testenv.Until(10*time.Second, cond) {
		t.Fatalf("condition not met in 10s: %s", msg())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testenv.Poll(t, 10*time.Second, "the condition", cond)
}

// With KeepTree, what the command started runs on after it exits (a server
// that daemonizes) until it ends or the tree is stopped.
func TestKeepTree(t *testing.T) {
	t.Parallel()
	keepTree(t, start)
}

func keepTree(t *testing.T, s starter) {
	tok := token(t)
	p, out := s(t, t.Context(), sandbox.Spec{KeepTree: true}, fmt.Sprintf("(setsid sleep 100.%s >/dev/null 2>&1 &); echo started", tok))
	waitFor(t, func() bool { return len(survivors(tok)) == 1 })
	// The command has exited and been reaped; the tree runs on until Stop:
	// Exit says so (stopped, the command's code, one leftover).
	waitFor(t, func() bool { return syscall.Kill(p.Pid(), 0) == syscall.ESRCH })
	p.Stop()
	<-p.Done()
	if exit := p.Exit(); exit.Code != 0 || exit.Leftovers != 1 || !exit.Stopped {
		t.Errorf("exit %s with %d leftovers, stopped %v; want the command's code 0, 1 leftover, stopped", exit, exit.Leftovers, exit.Stopped)
	}
	if out() != "started\n" {
		t.Errorf("output %q", out())
	}
	checkClean(t, tok)
}

// A helper that never answers (stuck before it reports, here ignoring
// SIGTERM) does not hang Start: after Runner.AnswerTimeout, or when Start's
// context ends, it is killed with what it started (a child in its group)
// and Start fails with a StartError, or with the context's error.
func TestStartStuckHelper(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		cancel  bool
	}{
		{name: "answer timeout", timeout: 300 * time.Millisecond},
		{name: "context ends", cancel: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok := token(t)
			r := sandbox.Runner{Helper: "/bin/sh", AnswerTimeout: tt.timeout,
				Args: []string{"-c", fmt.Sprintf(`trap "" TERM; sleep 100.%[1]s & exec sleep 101.%[1]s`, tok)}}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				go func() {
					testenv.Until(30*time.Second, func() bool { return len(sleepers(tok)) == 2 })
					cancel()
				}()
			}
			p, err := r.Start(ctx, sandbox.Spec{Path: "/bin/true", Args: []string{"true"}}, sandbox.Stdio{})
			if err == nil {
				p.Stop()
				<-p.Done()
				t.Fatal("Start succeeded through a helper that never answers")
			}
			var se *sandbox.StartError
			switch {
			case tt.cancel && !errors.Is(err, context.Canceled):
				t.Errorf("Start: %v, want the context's error", err)
			case !tt.cancel && (!errors.As(err, &se) || !strings.Contains(err.Error(), "did not answer within 300ms")):
				t.Errorf("Start: %v (%T), want a StartError saying the helper did not answer", err, err)
			}
			testenv.Poll(t, 10*time.Second, "the stuck helper and its child to be gone", func() bool { return len(sleepers(tok)) == 0 })
		})
	}
}
