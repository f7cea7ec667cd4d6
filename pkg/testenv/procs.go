package testenv

import (
	"bytes"
	"os"
	"strconv"
)

// Named returns the pids of the processes whose argv[0] is name (as `exec
// -a name` sets it). Only the argv[0], not a substring of a command line:
// the stages that lead to a command (the sandbox helper's --confine-exec,
// the shell) hold the whole command line in theirs, and while one execs
// the next its cmdline reads empty for a moment.
func Named(name string) []int {
	return Pids(func(_ string, cmdline []byte) bool { return bytes.HasPrefix(cmdline, []byte(name+"\x00")) })
}

// Pids returns the pids of the processes for which keep, given the
// process's /proc directory and its command line, returns true.
func Pids(keep func(proc string, cmdline []byte) bool) []int {
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
