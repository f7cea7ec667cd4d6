package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Warm sandboxes.
//
// Most of what an isolated command costs is not the command: forking the
// helper into new namespaces, the helper's Go runtime start, and building
// its view of the file system (private, read-only, writable binds, masks,
// /proc) — milliseconds, all of it independent of which command runs. Warm
// does that ahead of time: it keeps a few helpers ready, each already the
// init (pid 1) of its own mount, pid, IPC and UTS namespaces, in the
// shared network namespace and in a cgroup slot of its own, with its view
// built, waiting on a socket for the one command it will run. A command
// then costs what is left: the masks that appeared since the view was
// built, dropping the capabilities, Landlock, and the fork of the command.
//
// Nothing is shared between commands that was not shared before: a warm
// helper serves exactly one command and ends with its tree, as a helper
// started for the command would; it was only started earlier. The masks are
// those of the moment the command starts: the command's policy (Hide) is
// sent with it, and the helper masks what its view lacks before it drops
// its capabilities. A warm helper that cannot serve a command — it died,
// its policy differs in anything but masks, its view failed — is discarded
// and the command gets a helper of its own as before: never a command
// without its sandbox.
//
// The protocol: a warm helper's argv is [HelperName, warmArg, Runner.Args...];
// fd 3 is a SOCK_SEQPACKET socket on which the daemon sends two messages:
// the Spec to prepare (its Policy), at once; then the Spec of the command
// with its standard files (SCM_RIGHTS, three descriptors). fd 4 is the
// status pipe as for any helper; a report of a failed preparation has
// message.Prep set. Closing the socket before the second message makes the
// helper exit.

// warmArg follows HelperName in a warm helper's argv.
const warmArg = "--warm"

// refillDelay is how long a command that took a ready helper may run
// before the pool is refilled (Start).
const refillDelay = 50 * time.Millisecond

// warmEnv is a warm helper's environment (never its command's: that is
// the Spec's). GOMAXPROCS=1 cost 8.27 ms of CPU per command against 8.73
// without it (BenchmarkWarmTrue, task-clock, see docs/terminal.md).
var warmEnv = []string{"GORACE=atexit_sleep_ms=0", "GOMAXPROCS=1"}

// maxWarmMessage bounds a message on a warm helper's socket.
const maxWarmMessage = 4 << 20

// Warm keeps sandboxed helpers ready for isolated commands (see above). It
// is safe for concurrent use; the zero value is not usable: NewWarm.
type Warm struct {
	runner Runner
	netns  *os.File
	limits *Limits
	grace  time.Duration
	size   int
	policy func() *Policy

	mu      sync.Mutex
	ready   []*warmHelper
	filling bool
	closed  bool
	wg      sync.WaitGroup // the filler and discarded helpers
}

// warmHelper is one helper ready for a command.
type warmHelper struct {
	cmd    *exec.Cmd
	sock   *os.File // the daemon's end of the helper's fd 3
	statR  *os.File
	slot   *Slot
	cancel context.CancelFunc
	pol    Policy // the policy its view was built for
	// lifeline says it holds the daemon's lifeline (Spec.Lifeline).
	lifeline bool
}

// NewWarm returns a pool of size helpers started by r in the network
// namespace netns (Netns.File), each in a slot of limits (nil: no
// limits). policy returns the policy of a command starting now (its masks
// of the moment); grace is the commands' grace period (Spec.Grace). The
// pool fills in the background; Close stops what is ready.
func NewWarm(r Runner, netns *os.File, limits *Limits, grace time.Duration, size int, policy func() *Policy) *Warm {
	w := &Warm{runner: r, netns: netns, limits: limits, grace: grace, size: size, policy: policy}
	w.refill()
	return w
}

// Start runs spec's command in a ready helper, as Runner.Start would with
// Stdio.Netns and a slot of the pool's Limits. ok is false when no ready
// helper can run it — the pool is empty, spec is not an isolated command
// with the pool's policy (masks aside), a terminal or a shim, or the
// helper it took did not answer —: the caller then starts a helper of its
// own, and nothing was started. With ok, err is the command's start error.
// The slot is released once the tree is gone.
func (w *Warm) Start(ctx context.Context, spec Spec, stdio Stdio) (p *Process, ok bool, err error) {
	if w == nil || spec.Policy == nil || !spec.Policy.Isolate || spec.Shim != nil || spec.Guard != "" ||
		stdio.Terminal || stdio.Slot != nil || stdio.Master != nil || spec.Grace != w.grace {
		return nil, false, nil
	}
	for {
		h, left := w.take()
		if h == nil {
			w.refill()
			return nil, false, nil
		}
		if !sameBoundary(h.pol, *spec.Policy) {
			w.discard(h)
			continue
		}
		p, ok, err := w.run(ctx, h, spec, stdio)
		if ok {
			// A helper's start (milliseconds of CPU) competes with the
			// command: unless the pool is empty now, it is refilled once
			// the command is done or has run for refillDelay (run).
			if err != nil || left == 0 {
				w.refill()
			}
			return p, true, err
		}
		// It did not answer: the next, or a helper of the caller's own.
	}
}

// take pops the oldest ready helper, or nil, and says how many are left.
func (w *Warm) take() (*warmHelper, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.ready) == 0 {
		return nil, 0
	}
	h := w.ready[0]
	w.ready = slices.Delete(w.ready, 0, 1)
	return h, len(w.ready)
}

// sameBoundary reports whether a helper prepared for a can run a command
// of policy b: everything but the masks and the read-only directories must
// be the same (the helper adds the masks and read-only directories it
// lacks, and lifts those b does not have).
func sameBoundary(a, b Policy) bool {
	return slices.Equal(a.Writable, b.Writable) && a.NoNetwork == b.NoNetwork &&
		slices.Equal(a.ConnectPorts, b.ConnectPorts) && a.Require == b.Require &&
		a.Isolate == b.Isolate && a.Proxy == b.Proxy && len(a.Cgroups) == 0 && len(b.Cgroups) == 0 &&
		a.Pids == b.Pids && a.Memory == b.Memory && a.NoUnixSupervisor == b.NoUnixSupervisor
}

// devNull is handed to a warm helper for a standard file the caller left
// unset.
var devNull = sync.OnceValues(func() (*os.File, error) { return os.OpenFile(os.DevNull, os.O_RDWR, 0) })

// run hands spec to h. ok is false when h did not take it (then h is
// discarded and nothing runs).
func (w *Warm) run(ctx context.Context, h *warmHelper, spec Spec, stdio Stdio) (*Process, bool, error) {
	spec.Version = protocolVersion
	spec.Stage = stageInit
	spec.Lifeline = h.lifeline
	null, err := devNull()
	if err != nil {
		w.discard(h)
		return nil, false, nil
	}
	fds := []int{int(null.Fd()), int(null.Fd()), int(null.Fd())}
	for i, f := range []*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr} {
		if f != nil {
			fds[i] = int(f.Fd())
		}
	}
	b, err := json.Marshal(spec)
	if err != nil {
		w.discard(h)
		return nil, false, nil
	}
	if err := sendWarm(h.sock, b, fds); err != nil {
		w.discard(h)
		return nil, false, nil
	}
	// Kept alive until sent: their descriptors were used above.
	runtime.KeepAlive(stdio)
	br := bufio.NewReader(h.statR)
	var first message
	// Bounded as a helper of the caller's own is (Runner.readAnswer): a
	// helper that took the command and never answers is killed with
	// whatever it started, and the call fails — never run again in
	// another helper, since it may have started.
	line, rerr := w.runner.readAnswer(ctx, br, h.statR)
	if errors.Is(rerr, os.ErrDeadlineExceeded) {
		w.discard(h)
		if ctx.Err() != nil {
			return nil, true, fmt.Errorf("starting the command in a warm sandbox helper: %w", context.Cause(ctx))
		}
		return nil, true, &StartError{Msg: fmt.Sprintf("the warm sandbox helper did not answer within %s (it was killed with whatever it started)", w.runner.answerTimeout())}
	}
	if rerr != nil || json.Unmarshal(line, &first) != nil || (first.Started == nil && first.Error == "") || first.Prep {
		w.discard(h)
		return nil, false, nil
	}
	if first.Error != "" {
		w.discard(h)
		return nil, true, &StartError{Msg: first.Error}
	}
	// The helper sent the command's pidfd before it reported the start.
	pid := recvPidfd(h.sock)
	h.sock.Close()
	h.sock = nil
	if pid <= 0 {
		// No pidfd (the command is already reaped): a search of /proc.
		pidSearches.Add(1)
		pid = hostChild(h.cmd.Process.Pid, first.Started.PID)
	}
	// The command's context stops the tree from now on: the helper's
	// own context (its exec.Cmd's) ends with it.
	stopAfter := context.AfterFunc(ctx, h.cancel)
	p := &Process{cmd: h.cmd, pid: pid, stop: h.cancel, done: make(chan struct{}), slot: h.slot, direct: true, reaped: make(chan struct{})}
	go p.wait(br, h.statR, h.cancel)
	// Not in w.wg: it ends with the command's tree, which Close does not
	// wait for.
	go func() {
		t := time.NewTimer(refillDelay)
		select {
		case <-p.done:
		case <-t.C:
		}
		t.Stop()
		w.refill()
		<-p.done
		stopAfter()
		// Once the init is reaped its slot is empty: removed at once.
		<-p.reaped
		h.slot.Release()
	}()
	return p, true, nil
}

// sendWarm sends one message with descriptors on a warm helper's socket.
func sendWarm(sock *os.File, b []byte, fds []int) error {
	rc, err := sock.SyscallConn()
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), b, oob, nil, 0)
		return !errors.Is(serr, unix.EAGAIN)
	}); err != nil {
		return err
	}
	return serr
}

// discard stops a helper that will run no command, and releases its slot.
func (w *Warm) discard(h *warmHelper) {
	if h.sock != nil {
		h.sock.Close()
	}
	if h.cmd.Process != nil {
		// No tree yet: nothing to stop gracefully. (The init of a pid
		// namespace ignores SIGTERM it does not handle.)
		_ = h.cmd.Process.Kill()
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		_ = h.cmd.Wait()
		h.statR.Close()
		h.cancel()
		h.slot.Release()
	}()
}

// refill tops the pool up in the background, one goroutine at a time.
func (w *Warm) refill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.filling || w.closed || len(w.ready) >= w.size {
		return
	}
	w.filling = true
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			w.mu.Lock()
			if w.closed || len(w.ready) >= w.size {
				w.filling = false
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			h, err := w.start()
			w.mu.Lock()
			if err != nil || w.closed {
				w.filling = false
				w.mu.Unlock()
				if h != nil {
					w.discard(h)
				}
				return
			}
			w.ready = append(w.ready, h)
			w.mu.Unlock()
		}
	}()
}

// start starts a warm helper and sends it the policy to prepare.
func (w *Warm) start() (*warmHelper, error) {
	pol := w.policy()
	if pol == nil || !pol.Isolate {
		return nil, errors.New("sandbox: the warm pool needs an isolated policy")
	}
	slot, err := w.limits.Take()
	if err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		slot.Release()
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "warm"), os.NewFile(uintptr(pair[1]), "warm-helper")
	statR, statW, err := os.Pipe()
	if err != nil {
		ours.Close()
		theirs.Close()
		slot.Release()
		return nil, err
	}
	path := w.runner.Helper
	if path == "" {
		path = "/proc/self/exe"
	}
	pctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(pctx, path)
	cmd.Args = append([]string{HelperName, warmArg}, w.runner.Args...)
	// One processor: a helper's goroutines mostly wait (its two locked
	// threads block in system calls), and with one P its Go start is
	// cheaper (no cgroup and mountinfo read to size GOMAXPROCS, fewer
	// spinning threads) and can never take both cores from the commands
	// it prepares beside (warmEnv).
	cmd.Env = warmEnv
	cmd.ExtraFiles = []*os.File{theirs, statW, nil, nil}
	// A process group of its own, a session only when toold has a
	// controlling terminal (a warm helper never runs a terminal's command
	// nor a shim: see Start; and see Runner.start).
	session := hasControllingTerminal()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: session, Setpgid: !session, Cloneflags: cloneFlags}
	spec := Spec{Version: protocolVersion, Stage: stageInit, Policy: pol, Grace: w.grace}
	dieWithDaemon(cmd, &spec)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = w.grace + helperMargin
	netns := int(w.netns.Fd())
	startCmd := func() error {
		// On a thread of its own (the slot's, or a fresh one), which ends
		// after the fork: it stays in the sandbox's namespace.
		if err := joinNetns(netns); err != nil {
			return err
		}
		return cmd.Start()
	}
	if slot != nil {
		if fd := slot.cgroupFD(); fd >= 0 {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		}
		err = slot.start(startCmd, true)
	} else {
		err = onOwnThread(startCmd)
	}
	runtime.KeepAlive(w.netns)
	theirs.Close()
	statW.Close()
	h := &warmHelper{cmd: cmd, sock: ours, statR: statR, slot: slot, cancel: cancel, pol: *pol, lifeline: spec.Lifeline}
	if err != nil {
		ours.Close()
		statR.Close()
		cancel()
		slot.Release()
		return nil, fmt.Errorf("starting a warm sandbox helper %s: %w", path, err)
	}
	b, err := json.Marshal(spec)
	if err == nil {
		err = sendWarm(ours, b, nil)
	}
	if err != nil {
		return h, err
	}
	return h, nil
}

// Ready returns how many helpers are ready and how many the pool keeps
// (0, 0 for a nil pool). Tests wait for ready == size before counting a
// process's descriptors: each ready helper holds a few of toold's.
func (w *Warm) Ready() (ready, size int) {
	if w == nil {
		return 0, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ready), w.size
}

// Close stops the helpers that are ready and waits for the pool's
// goroutines; commands it started run on (their callers wait for them).
func (w *Warm) Close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.closed = true
	ready := w.ready
	w.ready = nil
	w.mu.Unlock()
	for _, h := range ready {
		w.discard(h)
	}
	w.wg.Wait()
}

// warmRequested reports whether this helper was started warm.
func warmRequested() bool { return len(os.Args) > 1 && os.Args[1] == warmArg }

// recvWarm receives one message, and the descriptors sent with it, on the
// warm helper's socket fd (blocking). Its buffer is the message's size,
// learned by a peek: a buffer of maxWarmMessage would be most of the
// helper's heap and start a garbage collection while it prepares.
func recvWarm(fd int) ([]byte, []int, error) {
	var size int
	for {
		// No room for descriptors: a peek would install copies of them.
		n, _, _, _, err := unix.Recvmsg(fd, make([]byte, 1), nil, unix.MSG_PEEK|unix.MSG_TRUNC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		size = n
		break
	}
	if size == 0 {
		return nil, nil, errors.New("the daemon closed the warm socket") // discarded
	}
	buf := make([]byte, min(size, maxWarmMessage))
	oob := make([]byte, unix.CmsgSpace(3*4))
	for {
		n, oobn, flags, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		var fds []int
		if oobn > 0 {
			scms, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err == nil {
				for _, scm := range scms {
					if rights, err := unix.ParseUnixRights(&scm); err == nil {
						fds = append(fds, rights...)
					}
				}
			}
		}
		if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			for _, f := range fds {
				unix.Close(f)
			}
			return nil, nil, errors.New("a message on the warm socket was truncated")
		}
		if n == 0 {
			return nil, nil, errors.New("the daemon closed the warm socket") // discarded
		}
		return buf[:n], fds, nil
	}
}

// warmMain is a warm helper (see above). It returns the process's exit
// status.
//
// Two threads: this one keeps its capabilities, to mask what appeared
// after the view was built; the forker, locked for the helper's whole life
// (the command's parent-death signal follows the thread that forks it),
// drops its capabilities and confines itself with Landlock while the helper
// waits, then receives the command, forks it and reports — so that when no
// mask is missing, which is the rule, the command's path crosses no other
// thread of the helper.
func warmMain() int {
	runtime.LockOSThread()
	unix.CloseOnExec(3)
	unix.CloseOnExec(4)
	unix.CloseOnExec(netnsFD)
	unix.CloseOnExec(lifelineFD)
	status := os.NewFile(4, "status")
	enc := json.NewEncoder(status)
	msg, _, err := recvWarm(3)
	if err != nil {
		return 0
	}
	var prep Spec
	if err := json.Unmarshal(msg, &prep); err != nil || prep.Policy == nil {
		_ = enc.Encode(message{Error: "reading the spec to prepare", Prep: true})
		return 0
	}
	if prep.Version != protocolVersion {
		_ = enc.Encode(message{Error: fmt.Sprintf("helper speaks protocol %d, the daemon %d", protocolVersion, prep.Version), Prep: true})
		return 0
	}
	// The view the command will see, as far as it is known now.
	pinned := map[string]bool{}
	if err := buildView(*prep.Policy, pinned); err != nil {
		_ = enc.Encode(message{Error: err.Error(), Prep: true})
		return 0
	}
	_ = unix.Sethostname([]byte("toold-sandbox"))
	masks := make(chan lateView)
	masked := make(chan error)
	go forker(*prep.Policy, prep.Lifeline, enc, status, masks, masked)
	// Masks and read-only directories the forker asks for, from this
	// thread, which still may mount.
	for late := range masks {
		err := lift(late.writable)
		if err == nil {
			err = readOnly(late.readOnly)
		}
		pinAncestors(slices.Concat(late.hide, late.readOnly), prep.Policy.Writable, pinned)
		for _, h := range late.hide {
			if err != nil {
				break
			}
			if e := mask(h); e != nil && !errors.Is(e, unix.ENOENT) && !errors.Is(e, unix.ENOTDIR) {
				err = fmt.Errorf("sandbox: hiding %s: %w", h, e)
				break
			}
		}
		masked <- err
	}
	return 0
}

// lateView is what a warm helper's view lacks for its command: masks and
// read-only directories that appeared since it was prepared, and the
// read-only directories of the view the command may write (toold's
// version-control tool's git).
type lateView struct{ hide, readOnly, writable []string }

// lift detaches the read-only binds of paths (readOnly), with what is
// below them: the directory is as writable as the one holding it again.
// A path that is no longer a mount point (below another one lifted) is
// skipped.
func lift(paths []string) error {
	for _, p := range paths {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("sandbox: making %s writable: %w", p, err)
		}
	}
	return nil
}

// forker is a warm helper's thread that runs the command (see warmMain).
// It asks the helper's first thread for what its view lacks on masks,
// and exits the process once the command is reported.
func forker(pol Policy, lifeline bool, enc *json.Encoder, status *os.File, masks chan<- lateView, masked <-chan error) {
	runtime.LockOSThread() // never unlocked: see warmMain
	err := dropCapabilities(&pol)
	confined := false
	if err == nil {
		confined, err = confineThread(pol)
		if err == nil && !confined && pol.Require && LandlockABI() == 0 {
			err = errors.New("landlock is required but this kernel does not offer it")
		}
	}
	// What supervise would do first, done while the helper waits.
	var sigs chan os.Signal
	if err == nil {
		sigs, err = prepareSupervise()
	}
	if lifeline {
		// The daemon's lifeline (Spec.Lifeline), watched from now on.
		go watchLifeline()
	}
	done := map[string]bool{}
	for _, h := range pol.Hide {
		done[h] = true
	}
	doneRO := map[string]bool{}
	for _, r := range pol.ReadOnly {
		doneRO[r] = true
	}
	// Wait for the command: the daemon closes the socket instead when it
	// discards this helper, or when it dies.
	msg, fds, rerr := recvWarm(3)
	if rerr != nil {
		os.Exit(0)
	}
	var spec Spec
	if err == nil && (json.Unmarshal(msg, &spec) != nil || spec.Policy == nil || len(fds) != 3) {
		err = errors.New("reading the command's spec")
	}
	if err != nil {
		for _, f := range fds {
			unix.Close(f)
		}
		_ = enc.Encode(message{Error: err.Error(), Prep: true})
		os.Exit(0)
	}
	run := func(spec Spec, onStart func(pid int)) (Exit, error) {
		// The masks of this moment that the view lacks (a secret or a
		// socket that appeared since it was built).
		var late lateView
		for _, h := range spec.Policy.Hide {
			if !done[h] {
				late.hide = append(late.hide, h)
			}
		}
		for _, r := range spec.Policy.ReadOnly {
			if !doneRO[r] {
				late.readOnly = append(late.readOnly, r)
			}
		}
		for _, r := range pol.ReadOnly {
			if !slices.Contains(spec.Policy.ReadOnly, r) {
				late.writable = append(late.writable, r)
			}
		}
		if len(late.hide)+len(late.readOnly)+len(late.writable) > 0 {
			masks <- late
			if err := <-masked; err != nil {
				return Exit{}, err
			}
		}
		if confined {
			spec.Policy = nil // applied to this thread already
		} else {
			spec.Policy.Isolate, spec.Policy.OwnNetns = false, true // supervise applies Landlock
		}
		spec.sigs = sigs
		spec.files = []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])}
		spec.afterFork = func() {
			// The command holds them now: the helper's copies would keep
			// its output open after it exits.
			for _, f := range fds {
				unix.Close(f)
			}
		}
		return supervise(spec, func(pid int) {
			// The command's pidfd, to the daemon before its start is
			// reported: the kernel translates the pid to the daemon's
			// namespace (sendPidfd), which a /proc search did on the
			// command's path.
			sendPidfd(3, pid)
			unix.Close(3)
			onStart(pid)
		})
	}
	// The status pipe is closed as soon as the exit is reported: the
	// kernel would close it only after the helper's namespaces are torn
	// down (a process's files are released after its namespaces), which
	// takes an RCU grace period, milliseconds the command need not wait.
	os.Exit(report(spec, nil, run, enc, status))
}

// pidSearches counts the warm commands whose pid was searched in /proc
// (tests).
var pidSearches atomic.Int64

// sendPidfd sends a pidfd of the helper's child pid on the warm socket
// fd (best effort: the daemon falls back to hostChild).
func sendPidfd(fd, pid int) {
	p, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	_ = unix.Sendmsg(fd, []byte("pidfd"), unix.UnixRights(p), nil, unix.MSG_NOSIGNAL)
	unix.Close(p)
}

// recvPidfd returns the pid, in the daemon's pid namespace, of the
// process whose pidfd the helper sent on sock (sendPidfd), or 0 when it
// sent none or the process is already reaped. It does not block.
func recvPidfd(sock *os.File) int {
	rc, err := sock.SyscallConn()
	if err != nil {
		return 0
	}
	var fds []int
	_ = rc.Control(func(fd uintptr) {
		oob := make([]byte, unix.CmsgSpace(4))
		_, oobn, flags, _, err := unix.Recvmsg(int(fd), make([]byte, 8), oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		if err != nil || oobn == 0 {
			return
		}
		scms, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return
		}
		for _, scm := range scms {
			if rights, err := unix.ParseUnixRights(&scm); err == nil {
				fds = append(fds, rights...)
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			for _, f := range fds {
				unix.Close(f)
			}
			fds = nil
		}
	})
	if len(fds) != 1 {
		for _, f := range fds {
			unix.Close(f)
		}
		return 0
	}
	defer unix.Close(fds[0])
	return pidfdPid(fds[0])
}

// pidfdPid returns the pid, in the caller's pid namespace, of the process
// the pidfd fd refers to (its fdinfo), or 0 when it is reaped.
func pidfdPid(fd int) int {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(b), "\nPid:")
	if !ok {
		return 0
	}
	line, _, _ := strings.Cut(rest, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
