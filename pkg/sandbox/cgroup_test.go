package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// cgroupChildEnv makes the test binary a daemon that dies (see
// TestCgroupsGuard).
const cgroupChildEnv = "TOOLD_CGROUP_TEST_CHILD"

// cgroupProbeEnv makes the test binary run one check in a process of its
// own (see cgroupProbe).
const cgroupProbeEnv = "TOOLD_CGROUP_TEST_PROBE"

var (
	cgroupsOnce sync.Once
	cgroupsErr  error
	cgroups     *sandbox.Cgroups
)

// openCgroups returns the Cgroups shared by this package's tests, or skips
// the test when the kernel or the privileges do not allow them (the
// terminal package then uses helpers, which the other tests cover).
func openCgroups(t *testing.T) *sandbox.Cgroups {
	t.Helper()
	cgroupsOnce.Do(func() {
		cgroups, cgroupsErr = sandbox.OpenCgroups(sandbox.CgroupConfig{
			Runner: sandbox.Runner{Args: sandbox.TestHelperArgs},
			Grace:  300 * time.Millisecond,
			Probe:  sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Grace: time.Second},
		})
	})
	if cgroupsErr != nil {
		if !errors.Is(cgroupsErr, sandbox.ErrNoCgroups) {
			t.Fatalf("OpenCgroups: %v does not wrap ErrNoCgroups", cgroupsErr)
		}
		testenv.Need(t, cgroupsErr, "cgroups v2 with a delegated subtree")
	}
	return cgroups
}

// cgStart starts script under bash in a cgroup, as start does under a
// helper.
func cgStart(t *testing.T, ctx context.Context, spec sandbox.Spec, script string) (*sandbox.Process, func() string) {
	t.Helper()
	p, out := startWith(t, openCgroups(t).Start, ctx, spec, script)
	if p.HelperPid() != 0 {
		t.Errorf("HelperPid %d for a command in a cgroup", p.HelperPid())
	}
	return p, out
}

func cgRun(t *testing.T, ctx context.Context, spec sandbox.Spec, script string) (sandbox.Exit, string) {
	t.Helper()
	return runWith(t, cgStart, ctx, spec, script)
}

func TestCgroupsExit(t *testing.T) {
	tests := []struct {
		name   string
		script string
		code   int
		signal syscall.Signal
		out    string
	}{
		{name: "success", script: "echo hello", out: "hello\n"},
		{name: "exit code", script: "echo out; echo err >&2; exit 3", code: 3, out: "out\nerr\n"},
		{name: "signal", script: "kill -TERM $$", code: -1, signal: syscall.SIGTERM},
		{name: "environment is the spec's only", script: `echo "${TOOLD_SECRET-unset}"`, out: "unset\n"},
		{name: "stdin is /dev/null", script: "cat; echo done", out: "done\n"},
	}
	t.Setenv("TOOLD_SECRET", "s3cret")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exit, out := cgRun(t, t.Context(), sandbox.Spec{}, tt.script)
			if exit.Code != tt.code || exit.Signal != tt.signal || exit.Err != nil || exit.Stopped || exit.Leftovers != 0 {
				t.Errorf("exit %+v, want code %d signal %v", exit, tt.code, tt.signal)
			}
			if out != tt.out {
				t.Errorf("output %q, want %q", out, tt.out)
			}
		})
	}
}

// A command is the leader of a process group of its own, so kill 0 reaches
// its group only (were it in toold's, the test binary would die of it), and
// it has no controlling terminal to open, whether toold has one or not.
func TestCgroupsCommandOwnGroup(t *testing.T) {
	script := `read -r _ _ _ _ pg _ < /proc/$$/stat
[ "$pg" = "$$" ] && echo own-group
if { : </dev/tty; } 2>/dev/null; then echo tty; else echo no-tty; fi
kill -TERM 0
echo survived`
	exit, out := cgRun(t, t.Context(), sandbox.Spec{}, script)
	if out != "own-group\nno-tty\n" || exit.Signal != syscall.SIGTERM {
		t.Errorf("exit %+v, output %q; want SIGTERM after \"own-group\\nno-tty\\n\"", exit, out)
	}
}

func TestCgroupsStartErrors(t *testing.T) {
	c := openCgroups(t)
	tests := []struct {
		name string
		spec sandbox.Spec
		want string
	}{
		{name: "missing working directory", spec: sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Dir: "/nonexistent/dir"}, want: "working directory /nonexistent/dir"},
		{name: "missing program", spec: sandbox.Spec{Path: "/nonexistent/prog", Args: []string{"prog"}}, want: "starting /nonexistent/prog"},
		{name: "confined", spec: sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Policy: &sandbox.Policy{}}, want: "needs a helper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := c.Start(t.Context(), tt.spec, sandbox.Stdio{})
			if err == nil {
				p.Stop()
				<-p.Done()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", err, tt.want)
			}
		})
	}
}

// The cgroup holds the whole tree: a grandchild that called setsid and was
// orphaned, and one that ignores SIGTERM, are stopped with the rest.
func TestCgroupsStopKillsWholeTree(t *testing.T) {
	tok := token(t)
	trapped := filepath.Join(t.TempDir(), "trapped")
	script := fmt.Sprintf(`
sleep 100.%[1]s &
setsid sleep 100.%[1]s &
(setsid sleep 100.%[1]s &)
bash -c 'trap "" TERM; touch %[2]s; sleep 100.%[1]s' &
echo ready
sleep 100.%[1]s`, tok, trapped)
	p, out := cgStart(t, t.Context(), sandbox.Spec{Grace: 300 * time.Millisecond}, script)
	// The process that ignores SIGTERM must have set its trap first.
	waitFor(t, func() bool { _, err := os.Stat(trapped); return err == nil })
	var m, s []int
	waitForMsg(t, func() bool {
		s = survivors(tok)
		m = p.Members()
		return len(s) >= 5 && subset(s, m)
	}, func() string { return fmt.Sprintf("the cgroup has members %v; the tree is %v", m, s) })
	begin := time.Now()
	p.Stop()
	<-p.Done()
	took := time.Since(begin)
	if exit := p.Exit(); !exit.Stopped || exit.Err != nil {
		t.Errorf("exit %+v, want stopped", exit)
	}
	if took < 250*time.Millisecond || took > 60*time.Second { // the grace, not the sleeps' 100 s
		t.Errorf("stopping took %s; want about the grace period (300ms), as one process ignores SIGTERM", took)
	}
	if !strings.Contains(out(), "ready") {
		t.Errorf("output %q", out())
	}
	if m := p.Members(); len(m) != 0 {
		t.Errorf("members %v after Done", m)
	}
	checkClean(t, tok)
	// Commands after a kill run normally: a killed cgroup is not reused
	// (a kernel that killed a cgroup once kills what is cloned into it).
	for i := range 10 {
		if exit, out := cgRun(t, t.Context(), sandbox.Spec{}, "echo after"); exit.Code != 0 || out != "after\n" {
			t.Fatalf("command %d after the kill: exit %+v output %q", i, exit, out)
		}
	}
}

func TestCgroupsContextStops(t *testing.T) { contextStops(t, cgStart) }

func TestCgroupsLeftoversStopped(t *testing.T) { leftoversStopped(t, cgStart) }

func TestCgroupsKeepTree(t *testing.T) { keepTree(t, cgStart) }

// Many commands at once each get their own cgroup; cgroups are reused and
// none is left behind with a process in it.
// A command's cgroup is watched (inotify on its cgroup.events) only while
// its tree outlives the command or is being stopped: a command that leaves
// nothing behind costs no watch (and toold no wake-ups when its cgroup
// fills and empties), and no watch is left once a tree is gone. Not
// parallel: the count is the shared Cgroups'.
func TestCgroupsWatchOnlyWhileTreeOutlives(t *testing.T) {
	c := openCgroups(t)
	tok := token(t)
	p, _ := cgStart(t, t.Context(), sandbox.Spec{}, "exec sleep 100."+tok)
	waitFor(t, func() bool { return len(survivors(tok)) == 1 })
	if n := c.Watches(); n != 0 {
		t.Errorf("%d cgroups watched while a command runs, want 0", n)
	}
	p.Stop()
	<-p.Done()
	if n := c.Watches(); n != 0 {
		t.Errorf("%d cgroups watched after a stopped command, want 0", n)
	}
	p, out := cgStart(t, t.Context(), sandbox.Spec{KeepTree: true}, fmt.Sprintf("(setsid sleep 100.%s >/dev/null 2>&1 &); echo started", tok))
	// The command exits; its leftover runs on, and its end is awaited
	// through the watch.
	waitFor(t, func() bool { return syscall.Kill(p.Pid(), 0) == syscall.ESRCH && c.Watches() == 1 })
	p.Stop()
	<-p.Done()
	if n := c.Watches(); n != 0 {
		t.Errorf("%d cgroups watched after the tree was stopped, want 0", n)
	}
	if exit := p.Exit(); exit.Leftovers != 1 || !exit.Stopped || out() != "started\n" {
		t.Errorf("exit %+v, output %q", exit, out())
	}
	checkClean(t, tok)
}

func TestCgroupsConcurrent(t *testing.T) {
	c := openCgroups(t)
	fds := func() int { ents, _ := os.ReadDir("/proc/self/fd"); return len(ents) }
	before := fds()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			exit, out := cgRun(t, t.Context(), sandbox.Spec{}, fmt.Sprintf("echo %d", i))
			if exit.Code != 0 || out != fmt.Sprintf("%d\n", i) {
				t.Errorf("command %d: exit %+v output %q", i, exit, out)
			}
		})
	}
	wg.Wait()
	procs, err := os.ReadFile(c.Dir() + "/cgroup.procs")
	if err != nil || len(bytes.TrimSpace(procs)) != 0 {
		t.Errorf("the cgroups' root holds %q (%v)", procs, err)
	}
	// Idle cgroups kept for reuse hold no descriptor.
	if after := fds(); after > before {
		t.Errorf("descriptors: %d before, %d after the commands", before, after)
	}
}

// When the daemon dies (SIGKILL: it cleans nothing up), the guard stops
// every tree, setsid orphans included, and removes the cgroups.
func TestCgroupsGuard(t *testing.T) {
	openCgroups(t) // skips when there are none
	tok := token(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), cgroupChildEnv+"="+tok)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child daemon did not report: %v", err)
	}
	dir := strings.TrimSpace(strings.TrimPrefix(line, "ready "))
	waitFor(t, func() bool { return len(survivors(tok)) >= 2 })
	cmd.Process.Kill()
	cmd.Wait()
	checkCleanWithin(t, tok, 10*time.Second)
	waitFor(t, func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) })
}

// cgroupChild is the daemon of TestCgroupsGuard: it starts a tree in a
// cgroup, says where, and waits to be killed.
func cgroupChild(tok string) {
	c, err := sandbox.OpenCgroups(sandbox.CgroupConfig{Grace: 200 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	spec := sandbox.Spec{Path: "/bin/bash", Args: []string{"bash", "-c", fmt.Sprintf("(setsid sleep 100.%s >/dev/null 2>&1 &); sleep 100.%[1]s", tok)}, Env: []string{"PATH=" + os.Getenv("PATH")}, Grace: 200 * time.Millisecond}
	if _, err := c.Start(context.Background(), spec, sandbox.Stdio{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("ready %s\n", c.Dir())
	select {}
}

func checkCleanWithin(t *testing.T, tok string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for len(survivors(tok)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("survivors %v", survivors(tok))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cgroupProbe runs a check that must not touch the test process itself:
// "subreaper" opens cgroups as a child subreaper; "sigign" runs a command
// from a daemon started with SIGHUP ignored and prints its SigIgn mask.
func cgroupProbe(mode string) {
	switch mode {
	case "subreaper":
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			fmt.Println("prctl:", err)
			os.Exit(0)
		}
		c, err := sandbox.OpenCgroups(sandbox.CgroupConfig{Grace: 100 * time.Millisecond})
		if err == nil {
			c.Close()
			fmt.Println("opened")
		} else {
			fmt.Println(err)
		}
	case "sigign":
		c, err := sandbox.OpenCgroups(sandbox.CgroupConfig{Grace: 100 * time.Millisecond})
		if err != nil {
			fmt.Println(err)
			os.Exit(0)
		}
		r, w, _ := os.Pipe()
		p, err := c.Start(context.Background(), sandbox.Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "grep SigIgn /proc/self/status"}, Grace: time.Second}, sandbox.Stdio{Stdout: w})
		w.Close()
		if err != nil {
			fmt.Println(err)
			os.Exit(0)
		}
		out, _ := io.ReadAll(r)
		<-p.Done()
		c.Close()
		fmt.Print(string(out))
	}
	os.Exit(0)
}

func runProbe(t *testing.T, mode string, wrap ...string) string {
	t.Helper()
	args := append(wrap, os.Args[0], "-test.run=^$")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), cgroupProbeEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe %s: %v\n%s", mode, err, out)
	}
	return string(out)
}

// A daemon that is a child subreaper would have to reap its commands'
// orphans: cgroups are refused, so helpers are used.
func TestCgroupsRefusedToSubreaper(t *testing.T) {
	openCgroups(t)
	out := runProbe(t, "subreaper")
	if !strings.Contains(out, "child subreaper") || !strings.Contains(out, sandbox.ErrNoCgroups.Error()) {
		t.Errorf("OpenCgroups as a subreaper: %q", out)
	}
}

// A daemon started with SIGHUP ignored (nohup) still starts commands with
// the default disposition, as under a helper.
func TestCgroupsCommandSignalsDefault(t *testing.T) {
	openCgroups(t)
	out := runProbe(t, "sigign", "/bin/sh", "-c", `trap "" HUP; exec "$0" "$@"`)
	mask, ok := strings.CutPrefix(strings.TrimSpace(out), "SigIgn:")
	if !ok {
		t.Fatalf("probe output %q", out)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if v&(1<<(uint(syscall.SIGHUP)-1)) != 0 {
		t.Errorf("the command ignores SIGHUP (SigIgn %s)", strings.TrimSpace(mask))
	}
}

// When the guard ends while toold runs, nothing protects the trees against
// toold's death any more: Start refuses with ErrNoCgroups (the terminal
// manager then uses helpers).
func TestCgroupsBrokenGuard(t *testing.T) {
	openCgroups(t)
	c, err := sandbox.OpenCgroups(sandbox.CgroupConfig{Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := syscall.Kill(c.GuardPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c.Broken)
	p, err := c.Start(t.Context(), sandbox.Spec{Path: "/bin/true", Args: []string{"true"}}, sandbox.Stdio{})
	if err == nil {
		<-p.Done()
		t.Fatal("Start succeeded without a guard")
	}
	if !errors.Is(err, sandbox.ErrNoCgroups) {
		t.Errorf("error %v is not ErrNoCgroups", err)
	}
}
