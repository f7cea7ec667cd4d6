package daemontest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// The test binary stands in for a shim: run as "toold-helper --shim" with
// FAKE_SHIM_FILE set, it holds that file open, starts a sleep below it and
// waits.
func TestMain(m *testing.M) {
	if f := os.Getenv("FAKE_SHIM_FILE"); f != "" {
		fakeShim(f)
		return
	}
	os.Exit(m.Run())
}

func fakeShim(path string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		os.Exit(2)
	}
	defer f.Close()
	sleep := exec.Command("sleep", "1000")
	if err := sleep.Start(); err != nil {
		os.Exit(2)
	}
	fmt.Fprintf(f, "%d\n", sleep.Process.Pid)
	sleep.Wait()
}

// recordingTB is a testing.TB whose cleanups and errors are kept for the
// test to run and read.
type recordingTB struct {
	testing.TB
	cleanups []func()
	errs     []string
}

func (r *recordingTB) Helper()                   {}
func (r *recordingTB) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }

// TestKillLeftovers: what a test left running — a shim holding a file of
// its state directory, the process below the shim, a process by its
// argv[0] — is killed by the cleanup, which reports nothing left.
func TestKillLeftovers(t *testing.T) {
	state := t.TempDir()
	out := filepath.Join(state, "proc", "out")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shim := &exec.Cmd{Path: self, Args: []string{sandbox.HelperName, "--shim"}, Env: append(os.Environ(), "FAKE_SHIM_FILE="+out)}
	if err := shim.Start(); err != nil {
		t.Fatal(err)
	}
	shimDone := make(chan struct{})
	go func() { shim.Wait(); close(shimDone) }()
	t.Cleanup(func() { shim.Process.Kill(); <-shimDone })
	name := "leftover-" + strconv.Itoa(os.Getpid())
	named := exec.Command("bash", "-c", "exec -a "+name+" sleep 1000")
	if err := named.Start(); err != nil {
		t.Fatal(err)
	}
	namedDone := make(chan struct{})
	go func() { named.Wait(); close(namedDone) }()
	t.Cleanup(func() { named.Process.Kill(); <-namedDone })

	var below int
	testenv.Poll(t, 20*time.Second, "the fake shim, its sleep and the named process", func() bool {
		b, _ := os.ReadFile(out)
		below, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		shims := daemontest.Shims(state)
		return below > 0 && len(shims) == 1 && shims[0] == shim.Process.Pid && len(testenv.Named(name)) == 1
	})
	if got := daemontest.Shims(filepath.Dir(state) + "/" + filepath.Base(state) + "0"); len(got) != 0 {
		t.Fatalf("a directory whose name only starts with the state directory's holds shims %v", got)
	}

	rec := &recordingTB{TB: t}
	daemontest.KillLeftovers(rec, state, name)
	for i := len(rec.cleanups) - 1; i >= 0; i-- {
		rec.cleanups[i]()
	}
	if len(rec.errs) > 0 {
		t.Fatalf("the cleanup reported: %v", rec.errs)
	}
	for what, pid := range map[string]int{"the shim": shim.Process.Pid, "the process below it": below, "the named process": named.Process.Pid} {
		if !testenv.Ended(pid) {
			t.Errorf("%s (pid %d) still runs", what, pid)
		}
	}
	<-shimDone
	<-namedDone
	if ws := shim.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the shim ended with %v, not by SIGKILL", shim.ProcessState)
	}
}
