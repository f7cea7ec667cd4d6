package daemontest

import (
	"bytes"
	"os"
	"strconv"
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
			pids = append(pids, Named(name)...)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		left := func() []int {
			var out []int
			for _, pid := range pids {
				if !Ended(pid) {
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
	return pidsWhere(func(proc string, cmdline []byte) bool {
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

// Named returns the pids of the processes whose argv[0] is name (as `exec
// -a name` sets it). Only the argv[0], not a substring of a command line:
// the stages that lead to a command (the helper's --confine-exec, the
// shell) hold the whole command line in theirs, and while one execs the
// next its cmdline reads empty for a moment.
func Named(name string) []int {
	return pidsWhere(func(_ string, cmdline []byte) bool { return bytes.HasPrefix(cmdline, []byte(name+"\x00")) })
}

// pidsWhere returns the pids of the processes for which keep, given the
// process's /proc directory and its command line, returns true.
func pidsWhere(keep func(proc string, cmdline []byte) bool) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		proc := "/proc/" + e.Name()
		if b, _ := os.ReadFile(proc + "/cmdline"); keep(proc, b) {
			out = append(out, pid)
		}
	}
	return out
}

// Ended reports whether the process pid has ended: it is no longer in
// /proc, or is a zombie not yet reaped.
func Ended(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}
