// Package peercred tells whether a client connected to toold is one of
// toold's own commands' processes, from the kernel's view of the peer: the
// peer's credentials (SO_PEERCRED on a unix socket; on loopback TCP, the
// processes holding the client's end of the connection, found through
// /proc/net/tcp{,6} and /proc/PID/fd), and toold's own process tree and
// command cgroups. Nothing the client says about itself (a path, an
// environment variable, a user agent) takes part.
//
// A process is one of toold's commands when:
//
//   - its chain of parents (/proc/PID/stat) leads to toold through at least
//     one process in between: toold never runs a command as its own direct
//     child, but under a helper process (pkg/sandbox) that is a child
//     subreaper, so a command's process that double-forks and calls setsid
//     is re-parented to the helper and stays in the chain;
//   - or it is a direct child of toold while toold is itself init (pid 1)
//     or a child subreaper: then orphans are re-parented to toold, and a
//     direct child may be a command's process whose helper died;
//   - or its cgroup (/proc/PID/cgroup, the unified hierarchy) is one of
//     toold's command cgroups or below one (pkg/sandbox's Cgroups mode,
//     where the kernel keeps every process a command starts in its cgroup
//     whatever its parents do).
//
// Any other toold's command is refused too (Checker.AnyTooldCommand): no
// toold serves a process that runs below some toold's helper or in some
// toold's command cgroup.
//
// toold's direct children otherwise are what the operator configured: MCP
// servers and hooks (and, in tests, the clients a test starts).
//
// A peer that cannot be identified fails closed: a unix socket's peer whose
// process is gone is refused (the connecting process must be alive when
// toold accepts the connection).
package peercred

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Checker decides whether a process is one of toold's commands. The zero
// Checker is not usable: Self must be set. A Checker is safe for concurrent
// use when CommandCgroups is.
type Checker struct {
	// Self is toold's process id (os.Getpid()).
	Self int
	// ReapsOrphans says orphaned processes are re-parented to toold: toold
	// is pid 1 of its namespace or a child subreaper (see OrphansReparented).
	ReapsOrphans bool
	// CommandCgroups returns the cgroup directories (paths in the cgroup v2
	// hierarchy, as /proc/PID/cgroup shows them, e.g.
	// "/user.slice/toold-42-ab12") below which toold runs commands; nil or
	// an empty list: none.
	CommandCgroups func() []string
	// Proc is the proc file system's mount point; "" is "/proc".
	Proc string
	// AnyTooldCommand, when set, reports why process pid is a command's
	// process of some toold on this machine — this one's or another's —
	// or "" when it is not (pkg/sandbox's CommandOfAnyToold: below a
	// toold helper, or in a toold command cgroup). A command of another
	// toold is refused like one of this toold's own: otherwise a command
	// that finds another toold's socket (one bound after its sandbox's
	// view was made, which the view cannot mask) has that toold act for
	// it, outside its own sandbox and approvals.
	AnyTooldCommand func(pid int) string
}

// Verdict is what a Checker found about one process.
type Verdict struct {
	// PID is the process judged.
	PID int
	// Command is true when the process is one of toold's commands.
	Command bool
	// Reason says why, for logs and the refusal's message.
	Reason string
}

// ErrUnidentified is wrapped by the errors of a peer whose process cannot
// be found (it exited, or it is not visible from toold's pid namespace).
var ErrUnidentified = errors.New("the peer's process cannot be identified")

// maxDepth bounds the walk up a parent chain (pid_max is 4M; real trees are
// a few dozen deep).
const maxDepth = 4096

func (c *Checker) proc() string {
	if c.Proc == "" {
		return "/proc"
	}
	return c.Proc
}

// Check judges process pid. Its error (wrapping ErrUnidentified) says the
// process could not be read; callers refuse then.
func (c *Checker) Check(pid int) (Verdict, error) {
	v, err := c.own(pid)
	if err != nil || v.Command || c.AnyTooldCommand == nil || pid == c.Self {
		return v, err
	}
	if why := c.AnyTooldCommand(pid); why != "" {
		v.Command, v.Reason = true, why
	}
	return v, nil
}

// own judges whether pid is one of this toold's commands.
func (c *Checker) own(pid int) (Verdict, error) {
	v := Verdict{PID: pid}
	if pid <= 0 {
		return v, fmt.Errorf("%w: no process id", ErrUnidentified)
	}
	if pid == c.Self {
		return v, nil // toold itself (an in-process client)
	}
	if cg, err := c.cgroupOf(pid); err == nil && cg != "" && c.CommandCgroups != nil {
		for _, root := range c.CommandCgroups() {
			if root != "" && root != "/" && (cg == root || strings.HasPrefix(cg, strings.TrimSuffix(root, "/")+"/")) {
				v.Command, v.Reason = true, fmt.Sprintf("process %d is in toold's command cgroup %s", pid, cg)
				return v, nil
			}
		}
	}
	p, depth := pid, 0
	for {
		ppid, err := c.parentOf(p)
		if err != nil {
			if p == pid {
				return v, fmt.Errorf("%w: process %d: %v", ErrUnidentified, pid, err)
			}
			// An ancestor exited while we walked: its children were
			// re-parented; walk again from the start once.
			return c.recheck(pid)
		}
		depth++
		if ppid == c.Self {
			switch {
			case depth >= 2:
				v.Command, v.Reason = true, fmt.Sprintf("process %d descends from toold (pid %d) through a process toold started", pid, c.Self)
			case c.ReapsOrphans:
				v.Command, v.Reason = true, fmt.Sprintf("process %d is a child of toold (pid %d), which adopts orphans: it may be a command's orphan", pid, c.Self)
			}
			return v, nil
		}
		if ppid <= 1 || depth >= maxDepth {
			return v, nil
		}
		p = ppid
	}
}

// recheck walks pid's chain once more after an ancestor vanished mid-walk.
func (c *Checker) recheck(pid int) (Verdict, error) {
	v := Verdict{PID: pid}
	p, depth := pid, 0
	for depth < maxDepth {
		ppid, err := c.parentOf(p)
		if err != nil {
			return v, fmt.Errorf("%w: process %d: the chain of its parents changed while toold read it", ErrUnidentified, pid)
		}
		depth++
		if ppid == c.Self {
			if depth >= 2 || c.ReapsOrphans {
				v.Command, v.Reason = true, fmt.Sprintf("process %d descends from toold (pid %d)", pid, c.Self)
			}
			return v, nil
		}
		if ppid <= 1 {
			return v, nil
		}
		p = ppid
	}
	return v, nil
}

// parentOf reads the parent pid from /proc/PID/stat ("pid (comm) state
// ppid ..."; comm may contain spaces and parentheses).
func (c *Checker) parentOf(pid int) (int, error) {
	b, err := os.ReadFile(c.proc() + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable stat")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("unreadable stat")
	}
	if f[0][0] == 'Z' || f[0][0] == 'X' {
		return 0, fmt.Errorf("process %d has exited", pid)
	}
	return strconv.Atoi(string(f[1]))
}

// cgroupOf returns pid's cgroup in the unified (v2) hierarchy, "" when it
// has none.
func (c *Checker) cgroupOf(pid int) (string, error) {
	b, err := os.ReadFile(c.proc() + "/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return rest, nil
		}
	}
	return "", nil
}

// OwnCgroup returns the calling process's cgroup in the unified hierarchy
// ("" when it has none).
func OwnCgroup() string {
	c := Checker{Self: os.Getpid()}
	cg, _ := c.cgroupOf(os.Getpid())
	return cg
}

// OrphansReparented reports whether orphaned processes are re-parented to
// the calling process: it is pid 1 of its pid namespace, or a child
// subreaper. When it cannot tell, it says yes (the stricter answer).
func OrphansReparented() bool {
	if os.Getpid() == 1 {
		return true
	}
	// PR_GET_CHILD_SUBREAPER stores the flag at the address given (the
	// pointer is converted in the Syscall expression itself, the one form
	// that keeps it valid).
	var flag int32
	if _, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&flag)), 0); errno != 0 {
		return true
	}
	return flag != 0
}

// UnixPeer returns the process id and user id of the process that
// connected c (SO_PEERCRED: fixed when it called connect).
func UnixPeer(c *net.UnixConn) (pid, uid int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if serr != nil {
		return 0, 0, serr
	}
	return int(cred.Pid), int(cred.Uid), nil
}
