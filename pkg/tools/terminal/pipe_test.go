package terminal_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/testenv"
)

// The stdout pipe a command writes to is 1 MiB, or the largest the kernel
// lets toold have: read on the command's own descriptor 1, from outside.
// Where fs.pipe-max-size is lowered (a global sysctl, so a test cannot
// lower it without lowering the host's), the expectation follows it.
func TestCommandStdoutPipeSize(t *testing.T) {
	e := newEnv(t)
	tok := token()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := e.call(ctx, "conv", "pipe", "run_command", map[string]any{"command": "exec sleep 30." + tok}, nil)
		done <- err
	}()
	var pid int
	testenv.Poll(t, 30*time.Second, "the command to run", func() bool {
		for _, p := range survivors(tok) {
			if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); err == nil && string(comm) == "sleep\n" {
				pid = p
				return true
			}
		}
		return false
	})
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/fd/1", pid), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	size, err := unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0)
	unix.Close(fd)
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	want := 1 << 20
	if m := pipeMaxSize(t); m < want && !hasCap(t, unix.CAP_SYS_RESOURCE) {
		want = m
	}
	if size != want {
		t.Fatalf("the command's stdout pipe is %d bytes, want %d", size, want)
	}
}

func pipeMaxSize(t *testing.T) int {
	b, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if err != nil {
		t.Skipf("pipe-max-size: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// hasCap reports whether this process has capability c in effect.
func hasCap(t *testing.T, c int) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n&(1<<c) != 0
		}
	}
	return false
}
