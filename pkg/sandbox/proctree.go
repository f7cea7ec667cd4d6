package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// A shim's socket (shim.go) is a door into a process of one conversation:
// a session's shim hands the terminal's master to whoever connects, and a
// connection keeps a shim from ending as an orphan. Its only rightful
// client is toold — the one that started it, or the next one on the same
// state directory — so the shim applies the control plane's rule
// (pkg/peercred) from where it stands: a peer that is one of toold's
// commands' processes is refused, whoever's it is, judged by the kernel's
// view of the peer (its process tree and cgroup), never by a path or by
// what the peer says.
//
// From the shim's place toold's pid is not a fixed point (the shim
// outlives toold, and is adopted by another one), so the rule is stated by
// what stands between toold and every command: a helper process. toold
// never runs a command as its own child except in its Cgroups mode, and
// every process it places between itself and a command — a helper, a
// sandbox's init, a shim, a guard — runs with argv[0] == HelperName (see
// Runner.start, and stage two in ns.go; a new supervisor must keep that).
// A peer is a command's process when:
//
//   - it, or a parent on its chain up to the processes above the shim
//     itself, is a helper: commands and everything they start stay below
//     their helper (a child subreaper; in the sandbox, the init of its pid
//     namespace, which the processes inside cannot kill). The chain stops
//     at the shim's own ancestors, so that a toold that is itself some
//     other toold's command still owns its shims;
//   - or its cgroup lies below one of toold's command cgroups (named
//     toold-PID-HEX, see OpenCgroups and the limit groups) that the shim's
//     own cgroup is not below: in the Cgroups mode a command is toold's
//     direct child, and the kernel keeps everything it starts in its
//     cgroup.
//
// A peer that cannot be read (it exited, or its chain changed while the
// shim read it) is refused: fail closed.

// peerRefusal returns why the shim must refuse the process pid as its
// peer, or "" when it may own the shim. self is the shim's pid.
func peerRefusal(pid, self int) string {
	if pid <= 0 {
		return "the peer is outside the shim's pid namespace"
	}
	if pid == self {
		return ""
	}
	if cg, ok := procCgroup(pid); !ok {
		return fmt.Sprintf("process %d cannot be read", pid)
	} else if c := commandCgroup(cg, ownCgroup(self)); c != "" {
		return fmt.Sprintf("process %d is in toold's command cgroup %s", pid, c)
	}
	above := map[int]bool{}
	buf := make([]byte, 512)
	for p, depth := self, 0; p > 1 && depth < maxChain; depth++ {
		pi, ok := readStat(p, buf)
		if !ok {
			break
		}
		if p != self {
			above[p] = true
		}
		p = pi.ppid
	}
	for p, depth := pid, 0; depth < maxChain; depth++ {
		if above[p] {
			return ""
		}
		pi, ok := readStat(p, buf)
		if !ok || pi.state == 'Z' || pi.state == 'X' {
			if p == pid {
				return fmt.Sprintf("process %d cannot be read", pid)
			}
			return fmt.Sprintf("the parents of process %d changed while the shim read them", pid)
		}
		if isHelper(p) {
			return fmt.Sprintf("process %d runs below toold's helper %d: it is one of toold's commands' processes", pid, p)
		}
		if pi.ppid <= 1 {
			return ""
		}
		p = pi.ppid
	}
	return fmt.Sprintf("the parents of process %d are deeper than %d", pid, maxChain)
}

// CommandOfAnyToold reports why process pid is a command's process of some
// toold on this machine — below a toold helper, or in a toold command
// cgroup that the calling process's own cgroup is not below — or "" when it
// is not (the shims' rule above, stated from the caller's place; a process
// that cannot be read is reported too: fail closed). toold's control plane
// applies it besides its own process tree (pkg/peercred's AnyTooldCommand),
// so that no toold serves another toold's command.
func CommandOfAnyToold(pid int) string { return peerRefusal(pid, os.Getpid()) }

// maxChain bounds a walk up a chain of parents.
const maxChain = 4096

// isHelper reports whether process pid is a toold helper: its argv[0] is
// HelperName. A process may name itself so (then it is refused itself);
// it cannot rename its parents.
func isHelper(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	arg0, _, _ := bytes.Cut(b, []byte{0})
	return filepath.Base(string(arg0)) == HelperName
}

// procCgroup returns pid's cgroup in the unified (v2) hierarchy ("" when
// it has none) and whether /proc could be read.
func procCgroup(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return rest, true
		}
	}
	return "", true
}

func ownCgroup(self int) string {
	cg, _ := procCgroup(self)
	return cg
}

// commandCgroupName matches the cgroups toold makes for commands (and
// their parents): toold-PID-HEX.
var commandCgroupName = regexp.MustCompile(`^toold-[0-9]+-[0-9a-f]+$`)

// commandCgroup returns the command cgroup (a prefix of cg) that cg lies
// in or below and own does not, or "".
func commandCgroup(cg, own string) string {
	parts := strings.Split(strings.Trim(cg, "/"), "/")
	ownParts := strings.Split(strings.Trim(own, "/"), "/")
	for i, p := range parts {
		if i < len(ownParts) && ownParts[i] == p {
			continue
		}
		for j := i; j < len(parts); j++ {
			if commandCgroupName.MatchString(parts[j]) {
				return "/" + strings.Join(parts[:j+1], "/")
			}
		}
		return ""
	}
	return ""
}

// reapedAlready reports whether the child pid has been reaped (it is not
// even a zombie any more): a child that merely exited still answers
// signal 0. A pid reused since says false, as if it still ran.
func reapedAlready(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}
