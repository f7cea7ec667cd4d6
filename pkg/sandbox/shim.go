package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A shim is a helper that outlives toold (containerd's shim is the model:
// a small process per container that owns its stdio and outlives the
// daemon). toold starts background processes and terminal sessions under
// shims when it has a state directory, so that they keep running when
// toold exits or is killed, and the next toold on the same state directory
// adopts them.
//
// What makes a helper a shim (Spec.Shim):
//
//   - it gets no parent-death signal: toold's death does not stop the tree;
//   - the command's output does not go through toold: a background
//     process's stdout and stderr are a file in the process's directory
//     (the caller opens it, O_APPEND), and for a terminal the shim holds a
//     copy of the master and appends what the terminal writes to
//     ShimSpec.Log — so nothing written while toold is down is lost; toold
//     follows the file;
//   - it listens on a unix socket in the process's directory (toold's state
//     directory, masked in the sandbox). Only toold may connect: a peer of
//     another user, or one that is one of toold's commands' processes —
//     judged by its process tree and cgroup as the control plane judges
//     its clients (proctree.go, peerRefusal) — is refused, which matters
//     where the sandbox's reads layer is missing (sandbox: off, a
//     container without user namespaces). A connection is an owner: the shim sends the terminal's master on it
//     (SCM_RIGHTS; a byte without one for a background process) and counts
//     it until it closes. With no owner for ShimSpec.Orphan (toold died
//     and no toold came back), the shim stops the tree as on SIGTERM;
//   - once the tree is gone it writes the exit status to exit.json in the
//     directory (before it ends, so an adopting toold that sees the socket
//     close finds it).
//
// Stopping an adopted shim's tree is a SIGTERM to the shim (through a
// pidfd, so a reused pid is never signalled), exactly as for a helper that
// is toold's child.

// ShimSpec makes a helper a shim (see above).
type ShimSpec struct {
	// Dir is the process's own directory; it must exist.
	Dir string `json:"dir"`
	// Log, for a terminal, is the file the shim appends the terminal's
	// output to.
	Log string `json:"log,omitempty"`
	// MasterFD is the shim's descriptor of the terminal's master
	// (Stdio.Master); Start sets it.
	MasterFD int `json:"master_fd,omitempty"`
	// Orphan is how long the tree runs on while no toold is connected
	// before the shim stops it; 0 means until it ends.
	Orphan time.Duration `json:"orphan"`
}

// Names in a shim's directory.
const (
	shimSocket = "sock"
	// ShimExitFile is the exit status a shim writes once its tree is gone.
	ShimExitFile = "exit.json"
)

// shimAddr returns an address of the socket in dir that fits a
// sockaddr_un (108 bytes): the path itself, or a path through an O_PATH
// descriptor of dir (/proc/self/fd/N/sock); done closes that descriptor.
func shimAddr(dir string) (addr string, done func(), err error) {
	p := filepath.Join(dir, shimSocket)
	if len(p) < 100 {
		return p, func() {}, nil
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, err
	}
	return "/proc/self/fd/" + strconv.Itoa(fd) + "/" + shimSocket, func() { unix.Close(fd) }, nil
}

// shim is the helper's side.
type shim struct {
	spec   ShimSpec
	ln     *net.UnixListener
	master *os.File
	copied chan struct{} // closed when the master's output is all in the log

	mu     sync.Mutex
	owners int
	orphan *time.Timer
	ended  bool
}

// openShim makes the calling helper a shim: it listens on its socket and,
// for a terminal, starts copying the terminal's output to the log.
func openShim(spec ShimSpec) (*shim, error) {
	s := &shim{spec: spec, copied: make(chan struct{})}
	if spec.MasterFD > 0 {
		unix.CloseOnExec(spec.MasterFD)
		s.master = os.NewFile(uintptr(spec.MasterFD), "pty-master")
		log, err := os.OpenFile(spec.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("shim: the terminal's log: %w", err)
		}
		go func() {
			defer close(s.copied)
			defer log.Close()
			_, _ = io.Copy(log, s.master) // until EIO: nobody holds the terminal
		}()
	} else {
		close(s.copied)
	}
	addr, done, err := shimAddr(spec.Dir)
	if err != nil {
		return nil, err
	}
	defer done()
	_ = os.Remove(filepath.Join(spec.Dir, shimSocket))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("shim: listening: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	s.ln = ln
	s.mu.Lock()
	s.orphanedLocked()
	s.mu.Unlock()
	go s.serve()
	return s, nil
}

// orphanedLocked starts the orphan time.
func (s *shim) orphanedLocked() {
	if s.spec.Orphan <= 0 || s.ended {
		return
	}
	s.orphan = time.AfterFunc(s.spec.Orphan, func() {
		// Stop the tree as toold would: the supervisor catches it.
		_ = unix.Kill(os.Getpid(), unix.SIGTERM)
	})
}

// started is called once the command runs. A terminal's shim then lets go
// of its own copies of the terminal (its standard files), so that the
// master reads EIO once the tree is gone.
func (s *shim) started() {
	if s.master == nil {
		return
	}
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	for fd := 0; fd <= 2; fd++ {
		_ = unix.Dup3(null, fd, 0)
	}
	unix.Close(null)
}

// serve accepts owners until the listener closes.
func (s *shim) serve() {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		if !s.admit(c) {
			c.Close()
			continue
		}
		var oob []byte
		if s.master != nil {
			oob = unix.UnixRights(int(s.master.Fd()))
		}
		if _, _, err := c.WriteMsgUnix([]byte{1}, oob, nil); err != nil {
			c.Close()
			continue
		}
		s.mu.Lock()
		s.owners++
		if s.orphan != nil {
			s.orphan.Stop()
			s.orphan = nil
		}
		s.mu.Unlock()
		go func() {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
			s.mu.Lock()
			if s.owners--; s.owners == 0 {
				s.orphanedLocked()
			}
			s.mu.Unlock()
		}()
	}
}

// admit reports whether the peer of c may own the shim: it runs as this
// process's user and is not one of toold's commands' processes (see
// peerRefusal). A refused peer gets nothing — no greeting, no master — and
// does not count as an owner.
func (s *shim) admit(c *net.UnixConn) bool {
	cred, err := peerCred(c)
	if err != nil || int(cred.Uid) != os.Getuid() {
		return false
	}
	return peerRefusal(int(cred.Pid), os.Getpid()) == ""
}

func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	err = rc.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	return cred, errors.Join(err, cerr)
}

// finish records exit once the tree is gone (nil: the command did not
// start) and closes the socket. The terminal's output is drained first,
// so the log is whole when exit.json appears.
func (s *shim) finish(exit *Exit) {
	s.mu.Lock()
	s.ended = true
	if s.orphan != nil {
		s.orphan.Stop()
	}
	s.mu.Unlock()
	if s.master != nil {
		select {
		case <-s.copied:
		case <-time.After(2 * time.Second):
			// Something outside the tree holds the terminal.
		}
		s.master.Close()
	}
	if exit != nil {
		_ = writeFileAtomic(filepath.Join(s.spec.Dir, ShimExitFile), exit)
	}
	s.ln.Close()
	_ = os.Remove(filepath.Join(s.spec.Dir, shimSocket))
}

// shimExit is the JSON of exit.json: Exit, with the helper's own failure
// as text.
type shimExit struct {
	Exit
	Err string `json:"err,omitempty"`
}

func writeFileAtomic(path string, e *Exit) error {
	se := shimExit{Exit: *e}
	if e.Err != nil {
		se.Err = e.Err.Error()
	}
	b, err := json.Marshal(se)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadShimExit returns the exit status a shim wrote in dir, and whether
// there is one.
func ReadShimExit(dir string) (Exit, bool) {
	b, err := os.ReadFile(filepath.Join(dir, ShimExitFile))
	if err != nil {
		return Exit{}, false
	}
	var se shimExit
	if json.Unmarshal(b, &se) != nil {
		return Exit{}, false
	}
	e := se.Exit
	if se.Err != "" {
		e.Err = errors.New(se.Err)
	}
	return e, true
}

// dialShim connects to the shim listening in dir and returns the
// connection (held: toold owns the shim while it is open), the terminal's
// master when the shim holds one, and the shim's pid.
func dialShim(dir string) (*net.UnixConn, *os.File, int, error) {
	addr, done, err := shimAddr(dir)
	if err != nil {
		return nil, nil, 0, err
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: addr, Net: "unix"})
	done()
	if err != nil {
		return nil, nil, 0, err
	}
	cred, err := peerCred(c)
	if err != nil {
		c.Close()
		return nil, nil, 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil || n != 1 {
		c.Close()
		return nil, nil, 0, fmt.Errorf("shim in %s: no greeting: %v", dir, err)
	}
	var master *os.File
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil && len(msgs) == 1 {
			if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
				unix.CloseOnExec(fds[0])
				// Non-blocking, so that reads and writes wait in the poller.
				_ = unix.SetNonblock(fds[0], true)
				master = os.NewFile(uintptr(fds[0]), "/dev/ptmx")
			}
		}
	}
	return c, master, int(cred.Pid), nil
}

// AdoptShim takes over the shim listening in dir, left by a toold that is
// gone: the returned Process stands for the command (pid, in toold's pid
// namespace, as the first toold recorded it): Stop stops its tree, Done is
// closed and Exit valid once the shim has ended. master is the terminal's
// master when the shim holds one (the caller owns it). It fails when no
// shim answers in dir (its tree ended, or it was killed).
func AdoptShim(dir string, pid int, grace time.Duration) (p *Process, master *os.File, err error) {
	c, master, shimPid, err := dialShim(dir)
	if err != nil {
		return nil, nil, err
	}
	pidfd, err := unix.PidfdOpen(shimPid, 0)
	if err != nil {
		c.Close()
		if master != nil {
			master.Close()
		}
		return nil, nil, fmt.Errorf("shim %d: %w", shimPid, err)
	}
	p = &Process{pid: pid, done: make(chan struct{}), shimConn: c, shimPid: shimPid}
	stopReq := make(chan struct{})
	var once sync.Once
	p.stop = func() { once.Do(func() { close(stopReq) }) }
	go func() {
		// The shim closes the connection as it ends.
		_, _ = io.Copy(io.Discard, c)
		c.Close()
		e, ok := ReadShimExit(dir)
		if !ok {
			e = Exit{Code: -1, Err: errors.New("the helper ended without a report")}
		}
		p.exit = e
		unix.Close(pidfd)
		close(p.done)
	}()
	go func() {
		select {
		case <-p.done:
			return
		case <-stopReq:
		}
		_ = unix.PidfdSendSignal(pidfd, unix.SIGTERM, nil, 0)
		select {
		case <-p.done:
		case <-time.After(grace + helperMargin):
			// The shim did not stop its tree in time: kill it (an isolated
			// tree dies with its init, which dies with the shim).
			_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		}
	}()
	return p, master, nil
}

// Detach lets go of a shim's tree without stopping it: toold no longer
// owns it, and the shim's orphan time starts. For a Process that is not a
// shim's, it does nothing.
func (p *Process) Detach() {
	if p.shimConn != nil {
		p.shimConn.Close()
	}
}

// ShimPid returns the shim's process id, or 0 for a Process without one.
func (p *Process) ShimPid() int { return p.shimPid }

// shimArg follows HelperName in a shim's argv, so that the cgroup sweeps
// find it in /proc and leave its cgroups alone.
const shimArg = "--shim"

// holdsShim reports whether a process in the cgroup dir or below is a
// shim.
func holdsShim(dir string) bool {
	for _, pid := range cgroupProcs(dir) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) >= 2 && filepath.Base(args[0]) == HelperName && args[1] == shimArg {
			return true
		}
	}
	return false
}

// EndedProcess returns a Process for a command that ended while no toold
// ran (its shim recorded exit, or was lost): Done is closed.
func EndedProcess(pid int, exit Exit) *Process {
	p := &Process{pid: pid, done: make(chan struct{}), exit: exit, stop: func() {}}
	close(p.done)
	return p
}
