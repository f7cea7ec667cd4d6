package sandbox_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
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
	testenv.Poll(t, 20*time.Second, "a warm helper", func() bool { return w.Ready() == 1 })
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
	// is sent (bash execs its last command, sleep, in its own place).
	host := proc.Pid()
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", host))
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
	testenv.Poll(t, 20*time.Second, "the pool refilled", func() bool { return w.Ready() == 1 })
	if n := w.KillReady(); n != 1 {
		t.Fatalf("%d helpers ready", n)
	}
	spec = c.spec(c.policy())
	spec.Path, spec.Args, spec.Grace = "/bin/true", []string{"true"}, warmGrace
	if _, ok, err := w.Start(context.Background(), spec, sandbox.Stdio{}); ok {
		t.Fatalf("a dead helper took the command (err %v)", err)
	}
	// Refilled: the next command runs warm again.
	testenv.Poll(t, 20*time.Second, "the pool refilled", func() bool { return w.Ready() == 1 })
	p, out := warmStart(t, w, context.Background(), c.spec(c.policy()), nil, `echo fine`)
	if e := p.Exit(); e.Code != 0 || !strings.Contains(out(), "fine") {
		t.Fatalf("exit %v:\n%s", e, out())
	}
}
