package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/sandbox"
)

// TestHelperCommandGroup: a command without a terminal, under a helper (no
// namespaces, isolated, and in a ready helper of a warm pool), runs in the
// helper's process group, never toold's: kill 0 stops the command's tree
// and leaves toold (here the test binary) alone. It keeps toold's session
// (setsid(2) would cost a scheduler autogroup per command) unless toold
// has a controlling terminal, which a command of its session could open as
// /dev/tty: then the helper leads a session of its own.
func TestHelperCommandGroup(t *testing.T) {
	isolation(t)
	c := newCanaries(t)
	ownSession := false
	if fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		ownSession = true
	}
	toolsSid, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		s    starter
		spec sandbox.Spec
	}{
		{"helper", start, sandbox.Spec{}},
		{"isolated", start, c.spec(c.policy())},
		{"warm", func(t *testing.T, ctx context.Context, spec sandbox.Spec, script string) (*sandbox.Process, func() string) {
			return warmStart(t, warmPool(t, c, nil), ctx, spec, nil, script)
		}, c.spec(c.policy())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok := token(t)
			p, out := tc.s(t, t.Context(), tc.spec, fmt.Sprintf("sleep 100.%s; kill -TERM 0; echo survived", tok))
			var sl []int
			waitFor(t, func() bool { sl = sleepers(tok); return len(sl) == 1 })
			pgrp, sid := groupOf(t, p.Pid())
			helper := p.HelperPid()
			if pgrp == unix.Getpgrp() || pgrp != helper {
				// Not on to kill 0, which would reach the test binary.
				p.Stop()
				<-p.Done()
				t.Fatalf("the command's process group is %d; toold's is %d, the helper's pid %d", pgrp, unix.Getpgrp(), helper)
			}
			if ownSession && sid != helper {
				t.Errorf("toold has a controlling terminal, and the command's session is %d, not the helper's (%d)", sid, helper)
			}
			if !ownSession && sid != toolsSid {
				t.Errorf("the command's session is %d, not toold's (%d): a session per command costs an autogroup", sid, toolsSid)
			}
			// Let the shell go on to kill 0: its group, the helper's, stops.
			if err := unix.Kill(sl[0], unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-p.Done()
			if o, exit := out(), p.Exit(); strings.Contains(o, "survived") || exit.Signal != syscall.SIGTERM {
				t.Errorf("after kill 0: exit %+v, output %q; want SIGTERM", exit, o)
			}
		})
	}
}

// groupOf returns the process group and session of pid, as the host sees
// them.
func groupOf(t *testing.T, pid int) (pgrp, sid int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid pgrp session ...
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 4 {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	pgrp, _ = strconv.Atoi(f[2])
	sid, _ = strconv.Atoi(f[3])
	return pgrp, sid
}
