package daemontest

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// KillLeftovers makes the processes a test leaves below the state
// directory state die with the test, whether it passed or failed. A
// shim (toold-helper --shim) keeps its tree running while no toold is
// connected for terminal.survive's orphan time — an hour by default — so
// a test that failed before it killed what it started would leave its
// commands running that long.
//
// Call it before starting anything: the cleanup it registers then runs
// after those registered later (the daemons' stops, and a test's own check
// that nothing was left behind, which it does not replace). It kills with
// SIGKILL, by pid, each shim holding a file below state open and every
// process below it, and each process whose argv[0] is one of names (as
// `exec -a name` sets it); then it fails the test if any of them has not
// ended (a zombie has) within 20 seconds.
func KillLeftovers(t testing.TB, state string, names ...string) {
	t.Helper()
	t.Cleanup(func() {
		var pids []int
		for _, shim := range Shims(state) {
			pids = append(pids, shim)
			pids = append(pids, sandbox.Descendants(shim)...)
		}
		for _, name := range names {
			pids = append(pids, testenv.Named(name)...)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		left := func() []int {
			var out []int
			for _, pid := range pids {
				if !testenv.Ended(pid) {
					out = append(out, pid)
				}
			}
			return append(out, Shims(state)...)
		}
		if !testenv.Until(20*time.Second, func() bool { return len(left()) == 0 }) {
			t.Errorf("processes of the test still run after SIGKILL: %v", left())
		}
	})
}

// Shims returns the pids of the shims (toold-helper --shim) that hold a
// file below dir open.
func Shims(dir string) []int {
	return testenv.Pids(func(proc string, cmdline []byte) bool {
		if !bytes.HasPrefix(cmdline, []byte(sandbox.HelperName+"\x00--shim")) {
			return false
		}
		fds, _ := os.ReadDir(proc + "/fd")
		for _, fd := range fds {
			if l, _ := os.Readlink(proc + "/fd/" + fd.Name()); l == dir || strings.HasPrefix(l, dir+"/") {
				return true
			}
		}
		return false
	})
}
