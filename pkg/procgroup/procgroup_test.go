package procgroup_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/procgroup"
	"github.com/toold/toold/pkg/testenv"
)

// Canceling a command kills its whole group: a grandchild it left in the
// background is gone too, and Wait returns although the grandchild held
// the output pipe.
func TestKillOnCancelKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 300 & echo $!; wait")
	procgroup.KillOnCancel(cmd, true, 2*time.Second)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", buf[:n], err)
	}
	cancel()
	_ = cmd.Wait()
	testenv.Poll(t, 10*time.Second, "the grandchild to be gone", func() bool {
		return syscall.Kill(pid, 0) != nil || zombie(pid)
	})
}

// zombie reports a process that exited and waits to be reaped by init.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// Kill of a command never started does nothing.
func TestKillUnstarted(t *testing.T) {
	if err := procgroup.Kill(exec.Command("true")); err != nil {
		t.Fatal(err)
	}
	if err := procgroup.Kill(nil); err != nil {
		t.Fatal(err)
	}
}
