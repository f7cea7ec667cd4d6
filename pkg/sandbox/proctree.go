package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// procInfo is what the process table says about one process.
type procInfo struct {
	pid, ppid int
	state     byte // R, S, D, Z, T, ...
}

// readProcs reads every process's parent and state from /proc. Processes
// that exit while it reads are skipped.
func readProcs() ([]procInfo, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]procInfo, 0, len(names))
	buf := make([]byte, 512)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if pi, ok := readStat(pid, buf); ok {
			out = append(out, pi)
		}
	}
	return out, nil
}

// readStat parses /proc/PID/stat: "pid (comm) state ppid ...". comm may
// contain spaces and parentheses, so the fields start after the last ')'.
func readStat(pid int, buf []byte) (procInfo, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	n, _ := f.Read(buf)
	f.Close()
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+4 > len(b) {
		return procInfo{}, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 2 || len(fields[0]) != 1 {
		return procInfo{}, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, state: fields[0][0]}, true
}

// Descendants returns the processes below root in the process table (not
// root itself), zombies excluded, parents before children. It reads /proc
// once; processes forked meanwhile may be missing, so callers that must
// leave nothing behind repeat until it returns none.
func Descendants(root int) []int {
	procs, err := readProcs()
	if err != nil {
		return nil
	}
	children := make(map[int][]procInfo, len(procs))
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if c.pid == root { // cannot happen in a tree; guards a corrupt read
				continue
			}
			queue = append(queue, c.pid)
			if c.state != 'Z' {
				out = append(out, c.pid)
			}
		}
	}
	return out
}

// signalAll sends sig to every pid, ignoring processes that are gone.
func signalAll(pids []int, sigs ...syscall.Signal) {
	for _, pid := range pids {
		for _, s := range sigs {
			_ = syscall.Kill(pid, s)
		}
	}
}

// ZombieChildren returns the children of pid that have exited and not been
// reaped. Tests use it to check that nothing is left unreaped.
func ZombieChildren(pid int) []int {
	procs, err := readProcs()
	if err != nil {
		return nil
	}
	var out []int
	for _, p := range procs {
		if p.ppid == pid && p.state == 'Z' {
			out = append(out, p.pid)
		}
	}
	return out
}
