package procgroup_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/procgroup"
	"github.com/toold/toold/pkg/testenv"
)

// threads returns this process's OS thread count.
func threads(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads: in /proc/self/status")
	return 0
}

// parked counts goroutines waiting in procgroup.Exited in the poller.
func parked() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("[IO wait")) && bytes.Contains(g, []byte("procgroup.Exited")) {
			n++
		}
	}
	return n
}

// Many commands waited for at once hold no OS thread each: every waiter
// is parked in the poller, the thread count stays far below one per
// command, and each Wait still returns its command's exit status.
func TestWaitHoldsNoThread(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	const n = 64
	before := threads(t)
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		err   chan error
	}
	kids := make([]child, n)
	for i := range kids {
		cmd := exec.Command("sh", "-c", "read x; exit 3")
		procgroup.Own(cmd, false)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kids[i] = child{cmd: cmd, stdin: in, err: make(chan error, 1)}
		go func() { kids[i].err <- procgroup.Wait(cmd) }()
	}
	defer func() {
		for _, k := range kids {
			k.stdin.Close()
		}
	}()
	testenv.Poll(t, time.Minute, "every waiter parked in the poller", func() bool { return parked() == n })
	if got := threads(t); got >= before+n/2 {
		t.Errorf("%d threads while %d commands are waited for (%d before): the waits hold threads", got, n, before)
	}
	for _, k := range kids {
		k.stdin.Close()
	}
	for i, k := range kids {
		err := <-k.err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("child %d: Wait = %v, want exit status 3", i, err)
		}
	}
}

// Wait of a command that exited before it was called returns at once with
// its status.
func TestWaitExitedAlready(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, time.Minute, "the child to be a zombie", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
		return err == nil && strings.Contains(string(b), ") Z ")
	})
	var ee *exec.ExitError
	if err := procgroup.Wait(cmd); !errors.As(err, &ee) || ee.ExitCode() != 5 {
		t.Fatalf("Wait = %v, want exit status 5", err)
	}
}
