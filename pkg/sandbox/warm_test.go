package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
	"golang.org/x/sys/unix"
)

const warmGrace = 500 * time.Millisecond

// warmPool is a pool of one ready helper for c's policy, whose masks are
// those of *hide at the moment the helper is prepared.
func warmPool(t *testing.T, c canaries, hide func() []string) *sandbox.Warm {
	t.Helper()
	ns, err := sandbox.OpenNetns("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	lim, err := sandbox.OpenLimits(0, 0)
	if err != nil {
		t.Logf("no cgroup limits here (%v): the pool runs without slots", err)
		lim = nil
	}
	t.Cleanup(func() { lim.Close() })
	w := sandbox.NewWarm(sandbox.Runner{Args: sandbox.TestHelperArgs}, ns.File(), lim, warmGrace, 1, func() *sandbox.Policy {
		p := c.policy()
		if hide != nil {
			p.Hide = hide()
		}
		return p
	})
	t.Cleanup(w.Close)
	testenv.Poll(t, 20*time.Second, "a warm helper", func() bool { return w.ReadyNow() == 1 })
	return w
}

// warmStart starts script under bash in a ready helper of w; it fails the
// test when none could take it.
func warmStart(t *testing.T, w *sandbox.Warm, ctx context.Context, spec sandbox.Spec, stdin *os.File, script string) (*sandbox.Process, func() string) {
	t.Helper()
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	spec.Path, spec.Args, spec.Grace = "/bin/bash", []string{"bash", "-c", script}, warmGrace
	p, ok, err := w.Start(ctx, spec, sandbox.Stdio{Stdin: stdin, Stdout: wr, Stderr: wr})
	wr.Close()
	if !ok {
		r.Close()
		t.Fatal("the ready helper did not take the command")
	}
	if err != nil {
		r.Close()
		t.Fatalf("start: %v", err)
	}
	var (
		once sync.Once
		out  string
	)
	return p, func() string {
		once.Do(func() { b, _ := io.ReadAll(r); r.Close(); out = string(b) })
		return out
	}
}

// TestWarmConfines: a command run by a helper prepared ahead of time is
// confined exactly as one whose helper starts with it — secrets masked
// (including one that appeared after the helper was prepared), writes
// only in the workspace and temp dir, no capabilities, a pid namespace of
// its own where toold is invisible — and gets its standard files.
func TestWarmConfines(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	base := c.policy().Hide
	w := warmPool(t, c, func() []string { return base })
	// A secret the prepared view does not mask yet.
	late := c.ws + "/late.pem"
	if err := os.WriteFile(late, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := c.policy()
	p.Hide = append(p.Hide, late)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	me := os.Getpid()
	searches := sandbox.PidSearches()
	proc, out := warmStart(t, w, context.Background(), c.spec(p), inR, fmt.Sprintf(`
cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc .env late.pem 2>&1
echo ok > in-ws && echo ok > "$TMPDIR/in-tmp"
rm -f %[1]s/keep; echo x > %[1]s/new; umount late.pem; mount -o remount,rw /
cat late.pem
kill -0 %[2]d && echo SIGNALLED
echo "pid $$ procs $(ls /proc | grep -c '^[0-9]')"
read line; echo "read $line"
grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status
sh -c 'echo renamed > /proc/$$/comm' 2>/dev/null && echo LANDLOCK-MISSING
sleep 0.2 # warm-unique-arg`, c.outside, me))
	// The command waits for its line on stdin: read its cmdline before it
	// is sent (bash execs its last command, sleep, in its own place). The
	// pid is the helper's --confine-exec stage until it execs the shell,
	// both holding the command, and while it execs its cmdline reads
	// empty for a moment: wait for one that is not.
	host := proc.Pid()
	var cmdline []byte
	testenv.Poll(t, 10*time.Second, "the command's cmdline", func() bool {
		cmdline, _ = os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", host))
		return len(cmdline) > 0
	})
	fmt.Fprintln(inW, "from-stdin")
	inW.Close()
	exit := proc.Exit()
	o := out()
	if exit.Code != 0 {
		t.Fatalf("exit %v:\n%s", exit, o)
	}
	// Landlock (a write the mount namespace would allow), no capabilities,
	// no_new_privs.
	if strings.Contains(o, "LANDLOCK-MISSING") || !strings.Contains(o, "CapEff:\t0000000000000000") ||
		!strings.Contains(o, "CapBnd:\t0000000000000000") || !strings.Contains(o, "NoNewPrivs:\t1") {
		t.Fatalf("the command is not confined:\n%s", o)
	}
	if strings.Contains(o, secret) || strings.Contains(o, "SIGNALLED") {
		t.Fatalf("the sandbox leaked:\n%s", o)
	}
	if b, err := os.ReadFile(c.outside + "/keep"); err != nil || string(b) != secret+"\n" {
		t.Fatalf("the canary outside the workspace changed: %q %v\n%s", b, err, o)
	}
	if _, err := os.Lstat(c.outside + "/new"); err == nil {
		t.Fatalf("a file was created outside the workspace:\n%s", o)
	}
	for _, f := range []string{c.ws + "/in-ws", c.tmp + "/in-tmp"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("a write the sandbox allows failed: %v\n%s", err, o)
		}
	}
	var pid, procs int
	if i := strings.Index(o, "pid "); i >= 0 {
		fmt.Sscanf(o[i:], "pid %d procs %d", &pid, &procs)
	}
	if !strings.Contains(o, "read from-stdin") || pid < 2 || procs < 2 || procs > 9 {
		t.Fatalf("stdin or the pid namespace is not as expected:\n%s", o)
	}
	if !strings.Contains(string(cmdline), "warm-unique-arg") {
		t.Fatalf("Pid() = %d is not the command (cmdline %q)", host, cmdline)
	}
	// Read from the pidfd the helper sent (the command was running), not
	// searched in /proc.
	if n := sandbox.PidSearches() - searches; n != 0 {
		t.Fatalf("the pid of a running command was searched in /proc (%d)", n)
	}
}

// TestPidfdPid: a pidfd's process in the caller's pid namespace, and 0
// once it is reaped.
func TestPidfdPid(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Skipf("no pidfd here: %v", err)
	}
	defer unix.Close(fd)
	if got := sandbox.PidfdPid(fd); got != cmd.Process.Pid {
		t.Errorf("PidfdPid = %d, want %d", got, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if got := sandbox.PidfdPid(fd); got != 0 {
		t.Errorf("PidfdPid of a reaped process = %d, want 0", got)
	}
}

// TestWarmStop: the command's context stops its tree (and what it
// started in the background).
func TestWarmStop(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	w := warmPool(t, c, nil)
	ctx, cancel := context.WithCancel(context.Background())
	p, out := warmStart(t, w, ctx, c.spec(c.policy()), nil, `sleep 300 & echo started; wait`)
	testenv.Poll(t, 10*time.Second, "the command's output", func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid()))
		return len(b) > 0
	})
	cancel()
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the tree was not stopped")
	}
	if e := p.Exit(); !e.Stopped {
		t.Fatalf("exit %+v, want stopped:\n%s", e, out())
	}
}

// TestWarmFallback: a pool whose helper died, or whose policy differs from
// the command's in more than its masks, runs nothing (ok false: the
// caller starts a helper of its own) — never a command outside its
// sandbox.
func TestWarmFallback(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	w := warmPool(t, c, nil)
	other := c.policy()
	other.Writable = append(other.Writable, c.outside)
	spec := c.spec(other)
	spec.Path, spec.Args, spec.Grace = "/bin/true", []string{"true"}, warmGrace
	if _, ok, _ := w.Start(context.Background(), spec, sandbox.Stdio{}); ok {
		t.Fatal("a helper prepared for another policy took the command")
	}
	testenv.Poll(t, 20*time.Second, "the pool refilled", func() bool { return w.ReadyNow() == 1 })
	if n := w.KillReady(); n != 1 {
		t.Fatalf("%d helpers ready", n)
	}
	spec = c.spec(c.policy())
	spec.Path, spec.Args, spec.Grace = "/bin/true", []string{"true"}, warmGrace
	if _, ok, err := w.Start(context.Background(), spec, sandbox.Stdio{}); ok {
		t.Fatalf("a dead helper took the command (err %v)", err)
	}
	// Refilled: the next command runs warm again.
	testenv.Poll(t, 20*time.Second, "the pool refilled", func() bool { return w.ReadyNow() == 1 })
	p, out := warmStart(t, w, context.Background(), c.spec(c.policy()), nil, `echo fine`)
	if e := p.Exit(); e.Code != 0 || !strings.Contains(out(), "fine") {
		t.Fatalf("exit %v:\n%s", e, out())
	}
}

// TestWarmEnd: a warm command's end is reported once its whole tree is
// gone — a process it left in the background is stopped first, and its
// output reaches end of file — without waiting for the helper's
// namespaces to be torn down; Reaped follows, once the helper itself is
// gone, and the pool is ready again for the next command.
func TestWarmEnd(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	w := warmPool(t, c, nil)
	// The background process is found by its argv[0], unique to this run
	// (another run of this test may have its own sleep 3137).
	name := "warm-end-" + token(t)
	p, out := warmStart(t, w, context.Background(), c.spec(c.policy()), nil, `exec -a `+name+` sleep 3137 & echo left; exit 3`)
	helper := p.HelperPid()
	exit := p.Exit()
	if exit.Code != 3 || exit.Stopped || exit.Leftovers < 1 {
		t.Fatalf("exit %+v, want code 3 with a leftover stopped:\n%s", exit, out())
	}
	if o := out(); !strings.Contains(o, "left") {
		t.Fatalf("output %q", o)
	}
	select {
	case <-p.Reaped():
	case <-time.After(30 * time.Second):
		t.Fatal("the helper was not reaped")
	}
	if err := syscall.Kill(helper, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the helper %d is still there after Reaped (kill: %v)", helper, err)
	}
	if pids := testenv.Named(name); len(pids) > 0 {
		t.Fatalf("the command's background process is still running: %v", pids)
	}
	testenv.Poll(t, 20*time.Second, "the pool refilled", func() bool { return w.ReadyNow() == 1 })
}

// TestWarmHelperOutOfReach: a command cannot reach the helper that runs
// it — the init of its namespaces, which holds the daemon's status pipe:
// it cannot kill or stop it, read its memory or environment, follow its
// descriptors (the numbers are listed: /proc/PID/fd is its owner's, root),
// nor forge its exit report through them. Its real end is reported.
func TestWarmHelperOutOfReach(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	w := warmPool(t, c, nil)
	term := ""
	if sandbox.LandlockABI() >= 6 {
		// Below ABI 6 nothing keeps a command from asking its own init to
		// stop its own tree (the init handles SIGTERM): harmless, and not
		// what this test is about.
		term = "kill -TERM 1 2>/dev/null && echo SIGNALLED-TERM;"
	}
	p, out := warmStart(t, w, context.Background(), c.spec(c.policy()), nil, term+`
kill -KILL 1 2>/dev/null; kill -STOP 1 2>/dev/null
cat /proc/1/environ >/dev/null 2>&1 && echo READ-ENVIRON
head -c 16 /proc/1/mem >/dev/null 2>&1 && echo READ-MEM
for fd in 3 4 5 6; do readlink /proc/1/fd/$fd >/dev/null 2>&1 && echo READ-LINK-$fd; done
for fd in 0 1 2 3 4 5 6 7 8 9; do
  echo '{"exit":{"code":42}}' 2>/dev/null > /proc/1/fd/$fd && echo WROTE-$fd
done
sleep 0.2; echo alive; exit 7`)
	exit := p.Exit()
	o := out()
	if exit.Code != 7 || exit.Stopped || exit.Signal != 0 {
		t.Fatalf("exit %+v, want the command's own exit code 7:\n%s", exit, o)
	}
	for _, bad := range []string{"SIGNALLED", "READ-ENVIRON", "READ-MEM", "READ-LINK", "WROTE-"} {
		if strings.Contains(o, bad) {
			t.Fatalf("the command reached its helper (%s):\n%s", bad, o)
		}
	}
	if !strings.Contains(o, "alive") {
		t.Fatalf("output %q", o)
	}
}

// TestWarmReadOnly: a read-only directory the prepared view lacks is made
// read-only before the command runs; one the prepared view has and the
// command's policy does not is made writable again.
func TestWarmReadOnly(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	if err := os.MkdirAll(c.ws+"/ro", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.ws+"/ro/config", []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var prepared []string
	ns, err := sandbox.OpenNetns("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	w := sandbox.NewWarm(sandbox.Runner{Args: sandbox.TestHelperArgs}, ns.File(), nil, warmGrace, 1, func() *sandbox.Policy {
		p := c.policy()
		mu.Lock()
		defer mu.Unlock()
		p.ReadOnly = prepared
		return p
	})
	t.Cleanup(w.Close)
	testenv.Poll(t, 20*time.Second, "a warm helper", func() bool { return w.ReadyNow() == 1 })
	// The helpers prepared from now on have ro read-only.
	mu.Lock()
	prepared = []string{c.ws + "/ro"}
	mu.Unlock()
	p := c.policy()
	p.ReadOnly = []string{c.ws + "/ro"}
	proc, out := warmStart(t, w, context.Background(), c.spec(p), nil, readOnlyScript)
	checkReadOnly(t, c.ws, proc.Exit(), out())

	// Prepared with ro read-only, for a command that may write it (the
	// version-control tool's git): lifted before it runs.
	testenv.Poll(t, 20*time.Second, "the pool refilled", func() bool { return w.ReadyNow() == 1 })
	proc, out = warmStart(t, w, context.Background(), c.spec(c.policy()), nil, "echo more >> ro/config && touch ro/new")
	if e := proc.Exit(); e.Code != 0 {
		t.Fatalf("a write the command's policy allows failed: exit %v\n%s", e, out())
	}
	if b, _ := os.ReadFile(c.ws + "/ro/config"); string(b) != "kept\nmore\n" {
		t.Fatalf("ro/config %q after a command that may write it", b)
	}
	os.WriteFile(c.ws+"/ro/config", []byte("kept\n"), 0o644)
	os.Remove(c.ws + "/ro/new")
	// And one whose policy has it read-only runs warm.
	testenv.Poll(t, 20*time.Second, "the pool refilled", func() bool { return w.ReadyNow() == 1 })
	proc, out = warmStart(t, w, context.Background(), c.spec(p), nil, readOnlyScript)
	checkReadOnly(t, c.ws, proc.Exit(), out())
}

// TestWarmStuckHelper: a warm helper that took a command and never
// answers (stuck before it reports, ignoring SIGTERM) does not hang the
// call: after Runner.AnswerTimeout, or when the call's context ends, it is
// killed with what it started (a child in its pid namespace) and Start
// fails with a StartError, or with the context's error — ok is true: the
// command is not run again in another helper, since it may have started.
func TestWarmStuckHelper(t *testing.T) {
	isolation(t)
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		cancel  bool
	}{
		{name: "answer timeout", timeout: 300 * time.Millisecond},
		{name: "context ends", cancel: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCanaries(t)
			tok := token(t)
			script := t.TempDir() + "/stuck-helper"
			if err := os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\ntrap '' TERM\nsleep 100.%[1]s &\nexec sleep 101.%[1]s\n", tok)), 0o755); err != nil {
				t.Fatal(err)
			}
			ns, err := sandbox.OpenNetns("")
			if err != nil {
				t.Fatal(err)
			}
			defer ns.Close()
			w := sandbox.NewWarm(sandbox.Runner{Helper: script, AnswerTimeout: tt.timeout}, ns.File(), nil, warmGrace, 1, c.policy)
			defer w.Close()
			var stuck []int
			testenv.Poll(t, 20*time.Second, "a warm helper and its child", func() bool {
				stuck = sleepers(tok)
				return w.ReadyNow() == 1 && len(stuck) == 2
			})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			spec := c.spec(c.policy())
			spec.Path, spec.Args, spec.Grace = "/bin/true", []string{"true"}, warmGrace
			p, ok, err := w.Start(ctx, spec, sandbox.Stdio{})
			if err == nil {
				if p != nil {
					p.Stop()
					<-p.Done()
				}
				t.Fatalf("Start through a warm helper that never answers: ok %v, no error", ok)
			}
			if !ok {
				t.Errorf("ok false: the caller would run the command again in a helper of its own")
			}
			var se *sandbox.StartError
			switch {
			case tt.cancel && !errors.Is(err, context.Canceled):
				t.Errorf("Start: %v, want the context's error", err)
			case !tt.cancel && (!errors.As(err, &se) || !strings.Contains(err.Error(), "did not answer within 300ms")):
				t.Errorf("Start: %v (%T), want a StartError saying the helper did not answer", err, err)
			}
			// The stuck helper and its child are gone (the pool refills
			// with another stuck helper meanwhile: those pids are not
			// these).
			testenv.Poll(t, 10*time.Second, "the stuck helper and its child to be gone", func() bool {
				for _, pid := range stuck {
					if !testenv.Ended(pid) {
						return false
					}
				}
				return true
			})
			w.Close()
			testenv.Poll(t, 10*time.Second, "every helper of the pool gone", func() bool { return len(sleepers(tok)) == 0 })
		})
	}
}
