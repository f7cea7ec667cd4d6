package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// HelperName is argv[0] of a helper process. RunHelperIfRequested runs the
// helper when the process was started under this name.
const HelperName = "toold-helper"

// protocolVersion is the version of Spec and of the status messages; a
// helper refuses a spec of another version.
const protocolVersion = 2

// Spec is what a helper runs.
type Spec struct {
	// Version is the protocol version; Start sets it.
	Version int `json:"v"`
	// Path is the absolute path of the program; Args its argv (Args[0]
	// included).
	Path string   `json:"path"`
	Args []string `json:"args"`
	// Env is the command's whole environment; nothing of the daemon's
	// environment is passed on implicitly.
	Env []string `json:"env"`
	// Dir is the working directory.
	Dir string `json:"dir"`
	// Terminal says the standard files are a terminal; stopping the tree
	// then also sends SIGHUP, as a terminal hangup would.
	Terminal bool `json:"terminal"`
	// KeepTree lets the processes the command started run on after it
	// exits (a server that daemonizes); the helper then ends when the last
	// of them does, or when it is stopped. By default they are stopped as
	// soon as the command exits.
	KeepTree bool `json:"keep_tree"`
	// Grace is how long processes get between SIGTERM and SIGKILL when the
	// tree is stopped.
	Grace time.Duration `json:"grace"`
	// Policy, when set, confines the tree (see the package documentation).
	Policy *Policy `json:"policy,omitempty"`
	// Guard, when set, makes the helper a guard of this cgroup directory
	// instead of running a command (see Cgroups).
	Guard string `json:"guard,omitempty"`
	// Stage is set by an isolated helper for its second stage (ns.go).
	Stage string `json:"stage,omitempty"`
	// SharedNetns says the helper got a network namespace to join as fd 5
	// (Stdio.Netns); Start sets it.
	SharedNetns bool `json:"shared_netns,omitempty"`
	// Lifeline says the helper got the read end of the daemon's lifeline
	// as fd 6 (dieWithDaemon): when it reads end of file the daemon is
	// gone, and the helper stops the tree. Start sets it.
	Lifeline bool `json:"lifeline,omitempty"`
	// Shim, when set, makes the helper a shim that outlives toold (see
	// shim.go).
	Shim *ShimSpec `json:"shim,omitempty"`

	// files are the command's standard files in the helper (nil: its own
	// 0, 1 and 2); afterFork runs once the command is forked. A warm
	// helper sets them, and sigs (warm.go).
	files     []uintptr
	afterFork func()
	// sigs, when set, are the signals prepareSupervise already catches.
	sigs chan os.Signal
}

// Exit is how a command's process tree ended.
type Exit struct {
	// Code is the command's exit status, or -1 when a signal ended it.
	Code int `json:"code"`
	// Signal is the signal that ended the command, or 0.
	Signal syscall.Signal `json:"signal"`
	// Stopped is true when the tree was stopped on request (Stop, or the
	// context of Start ended) rather than ending on its own.
	Stopped bool `json:"stopped"`
	// Leftovers counts processes that were still running when the command
	// exited; the helper stopped them unless Spec.KeepTree.
	Leftovers int `json:"leftovers"`
	// Err is set when the helper itself failed (it was killed after not
	// stopping the tree in time, or crashed); Code is then -1.
	Err error `json:"-"`
	// MemoryLimit is set when the kernel killed a process of the tree
	// because the tree reached its memory limit (Policy.Memory, in
	// bytes): the daemon sets it from the command's cgroup.
	MemoryLimit int64 `json:"-"`
}

// String describes the exit for people and models: "exit code 0",
// "killed by signal TERM".
func (e Exit) String() string {
	if e.MemoryLimit > 0 {
		oom := fmt.Sprintf("killed: memory limit %d MiB", e.MemoryLimit>>20)
		if e.Signal == 0 && e.Code >= 0 {
			// A process below the command was killed; the command went on.
			return fmt.Sprintf("exit code %d; a process it started was %s", e.Code, oom)
		}
		return oom
	}
	if e.Signal != 0 {
		return "killed by signal " + signalName(e.Signal)
	}
	if e.Err != nil {
		return "lost: " + e.Err.Error()
	}
	return fmt.Sprintf("exit code %d", e.Code)
}

// SignalName returns the short name of the signal that ended the command
// ("TERM", "KILL"), or "" when it exited.
func (e Exit) SignalName() string {
	if e.Signal == 0 {
		return ""
	}
	return signalName(e.Signal)
}

// signalName returns the short name of a signal ("TERM", "KILL").
func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n[3:] // without "SIG"
	}
	return fmt.Sprintf("%d", int(s))
}

// message is one status line from the helper to the daemon.
type message struct {
	// Started reports that the command runs.
	Started *started `json:"started,omitempty"`
	// Error reports that the command could not start.
	Error string `json:"error,omitempty"`
	// Exit reports that the tree is gone.
	Exit *Exit `json:"exit,omitempty"`
	// Prep says Error is a warm helper's (warm.go): it could not prepare
	// the sandbox, and the command did not start.
	Prep bool `json:"prep,omitempty"`
}

type started struct {
	PID int `json:"pid"`
}

// IsHelper reports whether this process was started as a helper.
func IsHelper() bool {
	return len(os.Args) > 0 && filepath.Base(os.Args[0]) == HelperName
}

// RunHelperIfRequested runs the helper and exits when this process was
// started as one (argv[0] == HelperName); otherwise it returns at once.
// Call it first thing in main, and in TestMain of tests that run commands:
//
//	func TestMain(m *testing.M) {
//		sandbox.RunHelperIfRequested()
//		os.Exit(m.Run())
//	}
func RunHelperIfRequested() {
	if IsHelper() {
		os.Exit(HelperMain())
	}
}

// HelperMain is the helper: it reads a Spec on fd 3, reports on fd 4, runs
// the command and supervises its tree until it is gone. It returns the
// helper's exit status: 0 when it reported an outcome on fd 4.
func HelperMain() int {
	if confineRequested() {
		return confineExec() // confine_exec.go
	}
	if warmRequested() {
		return warmMain()
	}
	specFile, status := os.NewFile(3, "spec"), os.NewFile(4, "status")
	if specFile == nil || status == nil {
		fmt.Fprintln(os.Stderr, HelperName+": started without its spec and status descriptors; this mode is for toold only")
		return 125
	}
	// The command must not inherit the status pipe (it could forge an
	// exit report), nor the shared network namespace.
	unix.CloseOnExec(4)
	unix.CloseOnExec(netnsFD)
	unix.CloseOnExec(lifelineFD)
	var spec Spec
	err := json.NewDecoder(specFile).Decode(&spec)
	enc := json.NewEncoder(status)
	if err != nil {
		specFile.Close()
		_ = enc.Encode(message{Error: "reading the spec: " + err.Error()})
		return 0
	}
	if spec.Version != protocolVersion {
		specFile.Close()
		_ = enc.Encode(message{Error: fmt.Sprintf("helper speaks protocol %d, the daemon %d: use the helper of the same toold build", protocolVersion, spec.Version)})
		return 0
	}
	if spec.Guard != "" {
		guard(spec, specFile, func() { _ = enc.Encode(message{Started: &started{PID: os.Getpid()}}) })
		_ = enc.Encode(message{Exit: &Exit{}})
		return 0
	}
	specFile.Close()
	if spec.Lifeline {
		go watchLifeline()
	}
	run := supervise
	if spec.Stage == stageInit {
		run = initMain
	}
	var sh *shim
	if spec.Shim != nil && spec.Stage == "" {
		if sh, err = openShim(*spec.Shim); err != nil {
			_ = enc.Encode(message{Error: err.Error()})
			return 0
		}
	}
	return report(spec, sh, run, enc, status)
}

// report runs spec's command with run, reports its start and its exit with
// enc (then closes status, when set), and runs afterReport. It returns the
// helper's exit status.
func report(spec Spec, sh *shim, run func(Spec, func(int)) (Exit, error), enc *json.Encoder, status *os.File) int {
	exit, err := run(spec, func(pid int) {
		_ = enc.Encode(message{Started: &started{PID: pid}})
		if sh != nil {
			sh.started()
		}
	})
	if err != nil {
		if sh != nil {
			sh.finish(nil)
		}
		_ = enc.Encode(message{Error: err.Error()})
		return 0
	}
	if sh != nil {
		// Recorded first: toold may be gone, and the next one reads it.
		sh.finish(&exit)
	}
	_ = enc.Encode(message{Exit: &exit})
	if status != nil {
		status.Close()
	}
	for _, f := range afterReport {
		f()
	}
	return 0
}

// lifelineFD is the descriptor of the daemon's lifeline in a helper
// (Spec.Lifeline).
const lifelineFD = 6

// daemonGone is closed when the helper's lifeline reads end of file: the
// daemon that started it is gone.
var daemonGone = make(chan struct{})

// watchLifeline closes daemonGone once the lifeline (fd 6) hangs up: its
// write end, held by the daemon alone, is closed. Nothing is ever written
// to it. (The pipe is non-blocking, as the daemon's os.Pipe made it: hence
// poll, not read.)
func watchLifeline() {
	fds := []unix.PollFd{{Fd: lifelineFD, Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			break
		}
		fds[0].Revents = 0
	}
	close(daemonGone)
}

// supervise runs spec's command and returns once its whole tree is gone.
// It calls onStart once the command runs; an error means it did not start.
func supervise(spec Spec, onStart func(pid int)) (Exit, error) {
	if spec.Policy != nil && spec.Policy.Isolate {
		return superviseIsolated(spec, onStart)
	}
	// The command's parent-death signal follows the thread that forks it:
	// this one, locked for the rest of the helper's life (HelperMain exits
	// the process after supervise), so the signal comes only when the
	// helper itself is gone.
	runtime.LockOSThread()
	sigs := spec.sigs
	if sigs == nil {
		var err error
		if sigs, err = prepareSupervise(); err != nil {
			return Exit{}, err
		}
	}
	path, args := spec.Path, spec.Args
	files := spec.files
	if files == nil {
		files = []uintptr{0, 1, 2}
	}
	notify := -1 // the helper's end of the socket the notify fd comes on
	if spec.Policy != nil {
		if spec.Policy.supervisedWithoutNamespaces() {
			// The command's connects are this helper's to decide
			// (unixnotify.go): its confining stage sends its filter's
			// notify fd on fd 3 (notifySendFD).
			pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return Exit{}, fmt.Errorf("sandbox: the supervisor's socket: %w", err)
			}
			notify = pair[0]
			files = append(files[:3:3], uintptr(pair[1]))
			pol := *spec.Policy
			pol.Supervised = true
			spec.Policy = &pol
		} else if spec.Policy.Supervised {
			// Only this helper says so: nothing serves the stage's fd 3.
			pol := *spec.Policy
			pol.Supervised = false
			spec.Policy = &pol
		}
		// Confined in the command's own first process, not here: the
		// helper stays outside the command's Landlock domain, so that
		// the command cannot kill it (confine_exec.go).
		var err error
		if path, args, err = confinedStage(spec); err != nil {
			if notify >= 0 {
				unix.Close(notify)
				unix.Close(int(files[3]))
			}
			return Exit{}, err
		}
	}
	pid, err := syscall.ForkExec(path, args, &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: files,
		// Should the helper be killed outright, take the command with it
		// (the thread is locked above: see there).
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if notify >= 0 {
		unix.Close(int(files[3])) // the stage's end
		if err == nil {
			go superviseWithoutNamespaces(notify, *spec.Policy)
		} else {
			unix.Close(notify)
		}
	}
	if err != nil {
		if spec.Dir != "" && errors.Is(err, syscall.ENOENT) {
			if _, serr := os.Stat(spec.Dir); serr != nil {
				return Exit{}, fmt.Errorf("working directory %s: %w", spec.Dir, serr)
			}
		}
		return Exit{}, fmt.Errorf("starting %s: %w", spec.Path, err)
	}
	if spec.afterFork != nil {
		spec.afterFork()
	}
	onStart(pid)

	// A command that ends at once and leaves nothing behind (true, a
	// quick test) is waited for on this thread: its end wakes this thread
	// only, not a reaper thread that then wakes this one.
	ws, reaped, alone := waitBriefly(pid, quickWait)
	if reaped && alone {
		return exitOf(Exit{}, ws), nil
	}

	// The reaper waits for every child: the command, its children that
	// were reparented here, and (after the command) the leftovers. It ends
	// when no child is left.
	var (
		mu        sync.Mutex
		status    unix.WaitStatus
		cmdDone   = make(chan struct{})
		treeEmpty = make(chan struct{})
	)
	if reaped {
		// Reaped above, with children left behind.
		status = ws
		close(cmdDone)
	}
	go func() {
		defer close(treeEmpty)
		for {
			var ws unix.WaitStatus
			p, err := unix.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil { // ECHILD: nothing left
				return
			}
			if p == pid {
				mu.Lock()
				status = ws
				mu.Unlock()
				close(cmdDone)
			}
		}
	}()

	self := os.Getpid()
	gone := daemonGone
	var (
		exit     Exit
		stopping bool
		killAt   <-chan time.Time
		killTick <-chan time.Time
	)
	stop := func() {
		stopping = true
		sigs := []syscall.Signal{syscall.SIGTERM, syscall.SIGCONT}
		if spec.Terminal {
			sigs = append(sigs, syscall.SIGHUP)
		}
		signalAll(Descendants(self), sigs...)
		killAt = time.After(spec.Grace)
	}
	// stopAsked stops the tree on request. A command the reaper already
	// reaped, whose exit this loop has not handled yet, exited before the
	// request: what runs on are its leftovers, counted as they would have
	// been had the exit been handled first.
	stopAsked := func() {
		exit.Stopped = true
		if cmdDone != nil && reapedAlready(pid) && hasChildren() {
			exit.Leftovers = len(Descendants(self))
		}
		stop()
	}
	for {
		select {
		case <-cmdDone:
			cmdDone = nil
			if !stopping && hasChildren() {
				exit.Leftovers = len(Descendants(self))
				if !spec.KeepTree {
					stop()
				}
			}
		case <-treeEmpty:
			mu.Lock()
			ws := status
			mu.Unlock()
			return exitOf(exit, ws), nil
		case s := <-sigs:
			if (s == unix.SIGTERM || s == unix.SIGHUP) && !stopping {
				stopAsked()
			}
		case <-gone:
			gone = nil
			if !stopping {
				stopAsked()
			}
		case <-killAt:
			killAt = nil
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			killTick = t.C
			signalAll(Descendants(self), syscall.SIGKILL)
		case <-killTick:
			// Processes forked while the previous round ran are found now.
			signalAll(Descendants(self), syscall.SIGKILL)
		}
	}
}

// superviseWithoutNamespaces receives the notify fd of the command's
// seccomp filter from its confining stage on conn (which it closes), and
// serves it for the helper's life: the command's tree is the helper's
// descendants (it is their subreaper). When the stage exits without
// sending one (it failed before its exec), there is nothing to serve.
func superviseWithoutNamespaces(conn int, pol Policy) {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	var err error
	for {
		n, oobn, _, _, err = unix.Recvmsg(conn, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	unix.Close(conn)
	if err != nil || n == 0 {
		return
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		closeAll(fds)
		return
	}
	serveUnixNotify(fds[0], &supervisor{pol: pol, tree: os.Getpid()})
}

// quickWait is how long supervise waits for its command on the forking
// thread before it hands the wait to a reaper thread. During it a stop
// (a signal, the lifeline) is acted on only at its end.
const quickWait = 5 * time.Millisecond

// waitBriefly waits up to d for the child pid to end (its pidfd), and
// reaps it if it did. alone says no other child was left then (its tree
// is gone: the command's orphans are this process's children).
func waitBriefly(pid int, d time.Duration) (ws unix.WaitStatus, reaped, alone bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return ws, false, false
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return ws, false, false
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return ws, false, false
		}
		break
	}
	for {
		p, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || p != pid {
			return ws, false, false
		}
		break
	}
	return ws, true, !hasChildren()
}

// exitOf completes exit with the command's wait status.
func exitOf(exit Exit, ws unix.WaitStatus) Exit {
	exit.Code = ws.ExitStatus()
	if ws.Signaled() {
		exit.Code, exit.Signal = -1, ws.Signal()
	}
	return exit
}

// prepareSupervise makes the calling process a subreaper and catches the
// signals supervise handles, which it returns; a warm helper calls it
// before its command arrives (Spec.sigs), to keep it off the command's path.
func prepareSupervise() (chan os.Signal, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("becoming a subreaper: %w", err)
	}
	// Catch (rather than ignore) the signals a terminal or the daemon may
	// send: caught signals are reset to their defaults in the command, while
	// ignored ones would stay ignored there.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)
	return sigs, nil
}

// hasChildren reports whether the calling process has a child, without
// reaping it.
func hasChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil
}

// guard is the helper's guard mode (see Cgroups): it waits until the
// daemon closes the spec pipe or dies (the kernel closes it then), or until
// it gets SIGTERM or SIGHUP, and then stops every process below the cgroup
// directory spec.Guard — SIGTERM, SIGKILL after spec.Grace — and removes the
// cgroups.
func guard(spec Spec, specFile *os.File, onStart func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGHUP)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, specFile)
		close(eof)
	}()
	onStart()
	select {
	case <-eof:
	case <-sigs:
	}
	killTree(spec.Guard, spec.Grace)
}
