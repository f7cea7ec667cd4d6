package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/testenv"
)

// ReapOrphans reaps a zombie child the process holds no pidfd of (an
// adopted orphan; here a child forked without one) and leaves alone one
// that os/exec waits for: its Wait still gets its exit status.
func TestReapOrphansLeavesOsExecChildren(t *testing.T) {
	if err := pidfdsWork(); err != nil {
		t.Skipf("pidfds: %v", err)
	}
	self := os.Getpid()
	owned := exec.Command("sh", "-c", "exit 7")
	if err := owned.Start(); err != nil {
		t.Fatal(err)
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := syscall.ForkExec(truePath, []string{"true"}, &syscall.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, 10*time.Second, "both children to exit", func() bool {
		z := ZombieChildren(self)
		return slices.Contains(z, owned.Process.Pid) && slices.Contains(z, orphan)
	})
	reaped := ReapOrphans(self)
	if !slices.Contains(reaped, orphan) {
		t.Errorf("the child without a pidfd was not reaped: %v", reaped)
	}
	if slices.Contains(reaped, owned.Process.Pid) {
		t.Fatalf("os/exec's child was reaped behind its Wait")
	}
	err = owned.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("Wait of os/exec's child: %v, want exit status 7", err)
	}
	if slices.Contains(ZombieChildren(self), orphan) {
		t.Fatalf("the orphan is still a zombie")
	}
}

// The reaper skips its scan of every process only when no child is a
// zombie: a zombie child (os/exec's, not yet waited for) is seen without
// being reaped, and its Wait still gets its exit status.
func TestZombieChildPendingSeesAZombieWithoutReapingIt(t *testing.T) {
	child := exec.Command("sh", "-c", "exit 3")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	testenv.Poll(t, 10*time.Second, "the child to exit", func() bool {
		return slices.Contains(ZombieChildren(self), child.Process.Pid)
	})
	for range 3 {
		if !zombieChildPending() {
			t.Fatal("a zombie child was not seen")
		}
	}
	err := child.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("Wait after the peeks: %v, want exit status 3", err)
	}
}
