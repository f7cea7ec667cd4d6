package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/procgroup"
)

// helperMargin is how long the daemon waits, beyond the grace period, for
// a helper that was asked to stop before it kills the helper itself.
const helperMargin = 3 * time.Second

// Runner starts commands through a helper. The zero Runner re-executes the
// running binary, which must call RunHelperIfRequested at the start of main.
// A Runner is safe for concurrent use.
type Runner struct {
	// Helper is the path of the helper executable: a binary that calls
	// RunHelperIfRequested first thing. Empty means the running binary
	// (/proc/self/exe, which stays valid when the file is replaced).
	Helper string
	// Args are given to the helper after its argv[0] (HelperName), which
	// ignores them. A test binary that stands in as the helper (Helper
	// empty in a test) is given TestHelperArgs, so that a test package
	// lacking the RunHelperIfRequested call in its TestMain runs no tests
	// there and Start fails with ErrNotHelper, instead of running the
	// package's tests again in every helper.
	Args []string
	// AnswerTimeout bounds how long Start waits for the helper's first
	// answer (the command started, or why not); zero means
	// DefaultAnswerTimeout. A helper that has not answered by then, or
	// when Start's context ends, is killed with whatever it started, and
	// Start fails: with a *StartError saying so, or with the context's
	// error. A helper that cannot do something must never hang a call.
	AnswerTimeout time.Duration
}

// DefaultAnswerTimeout is Runner.AnswerTimeout's default: far beyond a
// helper's start on a loaded machine (milliseconds), short enough that a
// stuck one ends the call instead of hanging it.
const DefaultAnswerTimeout = 60 * time.Second

// TestHelperArgs are the Runner.Args of a test binary standing in as the
// helper.
var TestHelperArgs = []string{"-test.run=^$"}

// Stdio are the standard files of the helper, which the command inherits.
// A nil Stdin reads from /dev/null; nil Stdout and Stderr go to /dev/null.
// The caller keeps ownership and may close its copies once Start returns.
type Stdio struct {
	Stdin, Stdout, Stderr *os.File
	// Terminal says Stdin is a terminal: the helper becomes the leader of a
	// new session with it as the controlling terminal.
	Terminal bool
	// Netns, for an isolated command (Policy.Isolate), is the network
	// namespace it joins (Netns.File) instead of creating one of its own.
	Netns *os.File
	// Slot, when set, is the cgroup the helper is born in (Limits.Take);
	// the caller releases it once the Process is done.
	Slot *Slot
	// Master, for a terminal run by a shim (Spec.Shim), is the terminal's
	// master: the shim appends what the terminal writes to ShimSpec.Log.
	Master *os.File
}

// attach sets cmd's standard streams to the files that are set (a nil
// *os.File in an io.Reader would not be a nil interface).
func (s Stdio) attach(cmd *exec.Cmd) {
	// An unset file is toold's one /dev/null (devNull), which os/exec
	// would otherwise open, try to add to the poller and close for each
	// command.
	null, _ := devNull()
	if s.Stdin != nil {
		cmd.Stdin = s.Stdin
	} else if null != nil {
		cmd.Stdin = null
	}
	if s.Stdout != nil {
		cmd.Stdout = s.Stdout
	} else if null != nil {
		cmd.Stdout = null
	}
	if s.Stderr != nil {
		cmd.Stderr = s.Stderr
	} else if null != nil {
		cmd.Stderr = null
	}
}

// answerTimeout is r.AnswerTimeout or its default.
func (r Runner) answerTimeout() time.Duration {
	if r.AnswerTimeout > 0 {
		return r.AnswerTimeout
	}
	return DefaultAnswerTimeout
}

// readAnswer reads the helper's first line from br (which reads statR)
// until r's answer timeout passes or ctx ends; either fails with
// os.ErrDeadlineExceeded. statR's deadline is cleared before it returns.
func (r Runner) readAnswer(ctx context.Context, br *bufio.Reader, statR *os.File) ([]byte, error) {
	if statR.SetReadDeadline(time.Now().Add(r.answerTimeout())) != nil {
		return br.ReadBytes('\n') // not pollable: a plain read
	}
	stop := context.AfterFunc(ctx, func() { _ = statR.SetReadDeadline(time.Now()) })
	line, err := br.ReadBytes('\n')
	if !stop() && err == nil {
		err = os.ErrDeadlineExceeded // ctx ended as the answer came: treat it as ended
	}
	_ = statR.SetReadDeadline(time.Time{})
	return line, err
}

// ErrNotHelper is returned by Start when the helper executable did not
// behave as one (it lacks the RunHelperIfRequested call).
var ErrNotHelper = errors.New("the helper executable did not start the command")

// StartError is returned by Start when the helper could not start the
// command (a missing working directory, a program that does not exist, a
// policy the kernel cannot enforce). Its message is fit for a model.
type StartError struct{ Msg string }

func (e *StartError) Error() string { return e.Msg }

// Process is a running command: under a helper (Runner.Start) or in a
// cgroup of its own (Cgroups.Start). Its methods are safe for concurrent
// use.
type Process struct {
	pid  int
	done chan struct{}
	exit Exit
	stop func()

	// Under a helper.
	cmd    *exec.Cmd
	slot   *Slot // the helper's cgroup, or nil
	direct bool  // the helper is the sandbox's init (see wait)
	// reaped, for a direct helper, is closed once it is reaped too (see
	// Reaped).
	reaped chan struct{}
	// sweep kills the helper's tree should the helper not stop it in
	// time; nil for a helper that has none.
	sweep *sweeper
	// In a cgroup.
	cgroupDir string
	stopOnce  sync.Once
	stopReq   chan struct{}

	// Under a shim (Spec.Shim): toold's connection to it, held while
	// toold owns the tree.
	shimConn *net.UnixConn
	shimPid  int
}

// Start starts spec's command under a helper and returns once it runs.
// When ctx ends (or Stop is called) the helper stops the whole tree:
// SIGTERM, then SIGKILL after spec.Grace. The Process's own goroutine waits
// for the helper; Done is closed once the tree is gone and reaped.
func (r Runner) Start(ctx context.Context, spec Spec, stdio Stdio) (*Process, error) {
	p, _, err := r.start(ctx, spec, stdio, false)
	return p, err
}

// startGuard starts a helper in its guard mode for the cgroup directory
// root (see Cgroups). The guard runs until the returned file, the write end
// of its spec pipe, is closed — by the daemon, or by the kernel when the
// daemon dies — and then stops every process below root. Unlike a command's
// helper it gets no parent-death signal: that signal comes when the thread
// that started it ends, which is not the daemon's death.
func (r Runner) startGuard(root string, grace time.Duration) (*Process, *os.File, error) {
	return r.start(context.Background(), Spec{Guard: root, Grace: grace}, Stdio{}, true)
}

func (r Runner) start(ctx context.Context, spec Spec, stdio Stdio, guard bool) (*Process, *os.File, error) {
	spec.Version = protocolVersion
	path := r.Helper
	if path == "" {
		path = "/proc/self/exe"
	}
	args := []string{HelperName}
	if spec.Shim != nil {
		args = append(args, shimArg) // marks it in /proc (holdsShim)
	}
	args = append(args, r.Args...)
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	statR, statW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(pctx, path)
	cmd.Args = args
	// The helper needs no environment (the command's is in spec). A
	// race-enabled build would sleep a second at every helper's exit.
	cmd.Env = []string{"GORACE=atexit_sleep_ms=0"}
	stdio.attach(cmd)
	// fd 3: the spec, 4: the status, 5: netnsFD, 6: lifelineFD, 7: a
	// shim's terminal master.
	cmd.ExtraFiles = []*os.File{specR, statW, nil, nil}
	if spec.Shim != nil {
		sh := *spec.Shim
		if stdio.Master != nil {
			cmd.ExtraFiles = append(cmd.ExtraFiles, stdio.Master)
			sh.MasterFD = 2 + len(cmd.ExtraFiles)
		}
		spec.Shim = &sh
	}
	// The helper leads the command's process group (the command and the
	// processes it starts stay in it unless they move; kill 0 reaches
	// them and the helper, which then stops the tree). A session of its
	// own only where it is needed, as in Cgroups.Start: for a terminal (it
	// becomes the controlling terminal), when toold has a controlling
	// terminal (a command in toold's session could open it as /dev/tty),
	// and for a shim, whose tree outlives toold (a process group of
	// toold's session would be orphaned at toold's death, and the kernel
	// sends SIGHUP to an orphaned group with a stopped member). setsid(2)
	// makes the kernel create a scheduler autogroup per session
	// (CONFIG_SCHED_AUTOGROUP), a cost every command's start paid
	// (bench/profiles-2026-11-27-outpath.md). Stopping the tree never
	// relies on either: the helper signals its descendants.
	session := stdio.Terminal || spec.Shim != nil || hasControllingTerminal()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:  session,
		Setpgid: !session,
		Setctty: stdio.Terminal,
		Ctty:    0,
	}
	startCmd := cmd.Start
	// direct: the helper is born the sandbox's init (see ns.go). A shim
	// is stage one (shim.go): it is never direct.
	direct := stdio.Netns != nil && spec.Policy != nil && spec.Policy.Isolate && len(spec.Policy.Cgroups) == 0 && spec.Shim == nil
	switch {
	case direct:
		spec.Stage = stageInit
		cmd.SysProcAttr.Cloneflags = cloneFlags
		netns := int(stdio.Netns.Fd())
		startCmd = func() error {
			// On a thread of its own (the slot's, or a fresh one), which
			// ends after the fork: it stays in the sandbox's namespace.
			if err := joinNetns(netns); err != nil {
				return err
			}
			return cmd.Start()
		}
	case stdio.Netns != nil && spec.Policy != nil && spec.Policy.Isolate:
		cmd.ExtraFiles[netnsFD-3] = stdio.Netns
		spec.SharedNetns = true
	}
	if !guard && spec.Shim == nil {
		// A shim's tree outlives the daemon.
		dieWithDaemon(cmd, &spec)
	}
	// Asked to stop, the helper stops the tree; one that has not after
	// the grace period and a margin is swept with its tree (sweeper), and
	// WaitDelay kills it for good should the sweep itself not end it.
	sw := &sweeper{}
	reap := func() error {
		procgroup.Exited(cmd.Process)
		sw.exited()
		return cmd.Wait()
	}
	cmd.Cancel = func() error {
		sw.arm(cmd.Process.Pid, spec.Grace+helperMargin)
		return cmd.Process.Signal(syscall.SIGTERM)
	}
	cmd.WaitDelay = spec.Grace + 2*helperMargin
	if s := stdio.Slot; s != nil {
		if fd := s.cgroupFD(); fd >= 0 {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		}
		err = s.start(startCmd, direct)
	} else if direct {
		err = onOwnThread(startCmd)
	} else {
		err = cmd.Start()
	}
	specR.Close()
	statW.Close()
	if err != nil {
		specW.Close()
		statR.Close()
		cancel()
		return nil, nil, fmt.Errorf("starting the command helper %s: %w", path, err)
	}
	// A failed write means the helper went away; its answer says how.
	_ = json.NewEncoder(specW).Encode(spec)
	if !guard {
		specW.Close()
	}
	br := bufio.NewReader(statR)
	var first message
	line, rerr := r.readAnswer(ctx, br, statR)
	if errors.Is(rerr, os.ErrDeadlineExceeded) {
		// Stuck: kill its group (Setsid made it the leader), which holds
		// whatever it started; the status pipe then reaches EOF for good.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		specW.Close()
		cancel()
		_ = reap()
		statR.Close()
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("starting the command helper %s: %w", path, context.Cause(ctx))
		}
		return nil, nil, &StartError{Msg: fmt.Sprintf("the command helper %s did not answer within %s (it was killed; the command did not run)", path, r.answerTimeout())}
	}
	if rerr != nil || json.Unmarshal(line, &first) != nil || (first.Started == nil && first.Error == "") {
		specW.Close()
		cancel()
		werr := reap()
		statR.Close()
		return nil, nil, fmt.Errorf("%w: %s exited (%v) without answering; a binary that embeds toold must call sandbox.RunHelperIfRequested first in main (and in TestMain)", ErrNotHelper, path, werr)
	}
	if first.Error != "" {
		specW.Close()
		cancel()
		_ = reap()
		statR.Close()
		return nil, nil, &StartError{Msg: first.Error}
	}
	pid := first.Started.PID
	if direct {
		// The init reported its child's pid in the sandbox's namespace.
		pid = hostChild(cmd.Process.Pid, pid)
		if pctx.Err() != nil {
			// A SIGTERM sent before the init could catch it was lost (the
			// init of a pid namespace ignores what it does not handle).
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	p := &Process{cmd: cmd, pid: pid, stop: cancel, done: make(chan struct{}), slot: stdio.Slot, direct: direct, sweep: sw}
	if direct {
		p.reaped = make(chan struct{})
	}
	if spec.Shim != nil {
		// toold owns the shim while this connection is open.
		c, master, _, err := dialShim(spec.Shim.Dir)
		if err == nil {
			if master != nil {
				master.Close() // the caller has its own
			}
			p.shimConn, p.shimPid = c, cmd.Process.Pid
		}
	}
	go p.wait(br, statR, cancel)
	if !guard {
		specW = nil
	}
	return p, specW, nil
}

// lifeline is a pipe whose write end only the daemon holds (close-on-exec,
// never written to): each helper gets its read end, which reads end of
// file once the daemon is gone, however it ended. Unlike a parent-death
// signal (Pdeathsig), which the kernel sends when the *thread* that forked
// the child exits — and the sandbox ends locked threads on purpose — it
// follows the daemon's life.
var lifeline struct {
	once sync.Once
	r, w *os.File
}

// dieWithDaemon ties the helper cmd starts to the daemon's life: when the
// daemon is gone (exit, crash, SIGKILL), the helper stops the command's
// tree as on SIGTERM (Spec.Lifeline). It is the one place that decides
// that commands die with toold; without it a helper and its tree outlive
// the daemon.
func dieWithDaemon(cmd *exec.Cmd, spec *Spec) {
	lifeline.once.Do(func() {
		// Held for the daemon's whole life: never closed.
		lifeline.r, lifeline.w, _ = os.Pipe()
	})
	if lifeline.r == nil {
		return // out of descriptors: Start fails on its own pipes first
	}
	cmd.ExtraFiles[lifelineFD-3] = lifeline.r
	spec.Lifeline = true
}

// onOwnThread runs f on a thread of its own, which is then discarded:
// for a fork from a thread that changed its namespace.
func onOwnThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Ends locked: the runtime ends the thread.
		runtime.LockOSThread()
		errc <- f()
	}()
	return <-errc
}

// initReapDelay is how long toold leaves a sandbox's init a zombie before
// it reaps it. Reaped at once, the Go helper (a dozen threads) cost toold
// 0.7-1 ms of CPU, sometimes 2, all in the kernel's invalidation of the
// helper's /proc entries (waitid -> release_task -> proc_flush_pid ->
// d_invalidate -> shrink_dcache_parent, which walks again and again while
// dentries below /proc/PID are still being released by the helper's
// exiting threads on the other core). A moment later they are gone and
// the reap costs about 60 µs (BenchmarkWarmTrue, the reaping thread's CPU
// time around waitid, load 19: 722, 976 -> 54, 69 µs; a 10-thread Go
// program that had read /proc/thread-self/stat cost its reaper 5 ms
// reaped at once). The command's end does not wait for it (Done comes
// first); only the slot's release does (Reaped). A zombie holds no
// namespace, file or memory of its tree, and its pid is not reused until
// it is reaped, so a signal sent meanwhile reaches no one else.
const initReapDelay = 20 * time.Millisecond

// waitExited waits, without reaping it, until the child pid has exited
// (its pidfd is readable), parked in the runtime's poller. It reports
// whether it saw the exit; false when it could not tell (no pidfd).
func waitExited(pid int) bool {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		if unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) != nil {
			return true // cannot tell: the caller reaps as before
		}
		exited = info.Signo == int32(unix.SIGCHLD)
		return exited
	})
	return err == nil && exited
}

// wait is the Process's goroutine: it waits for the helper and reads its
// final report.
func (p *Process) wait(br *bufio.Reader, statR *os.File, cancel context.CancelFunc) {
	if p.direct {
		// The init reports the exit once the command's whole tree is gone;
		// its exit follows, then the kernel tears its namespaces down —
		// RCU grace periods (milliseconds, tens on a busy machine) that the
		// command's result need not wait for. So the report is the end:
		// the init is reaped in the background.
		var rest []byte
		for {
			line, err := br.ReadBytes('\n')
			rest = append(rest, line...)
			if exit, ok := p.report(line); ok {
				p.exit = exit
				statR.Close()
				close(p.done)
				// Reaped once it has exited and initReapDelay has passed.
				if waitExited(p.cmd.Process.Pid) {
					time.Sleep(initReapDelay)
				}
				_ = p.reap()
				cancel()
				close(p.reaped)
				return
			}
			if err != nil {
				break
			}
		}
		br = bufio.NewReader(bytes.NewReader(rest))
		defer close(p.reaped)
	}
	defer close(p.done)
	werr := p.reap() // parked in the poller: no OS thread per command
	// The helper has exited: its report, if any, is in the pipe.
	rest, _ := io.ReadAll(br)
	statR.Close()
	cancel()
	if p.shimConn != nil {
		p.shimConn.Close()
	}
	if exit, ok := p.report(rest); ok {
		p.exit = exit
		return
	}
	// The helper died without a report: killed after not stopping the tree
	// in time, or crashed. Its process group is the last handle on what it
	// left behind.
	_ = procgroup.Kill(p.cmd)
	if werr == nil {
		werr = errors.New("the helper exited without a report")
	}
	p.exit = Exit{Code: -1, Err: werr}
}

// reap waits for the helper's exit, parked in the poller, then reaps it;
// from its exit on its pid is never signalled (sweeper.exited).
func (p *Process) reap() error {
	procgroup.Exited(p.cmd.Process)
	p.sweep.exited()
	return p.cmd.Wait()
}

// sweeper kills a helper's whole tree when the helper was asked to stop
// and has not ended within the grace period and helperMargin (stuck, or
// stopped by a debugger): every descendant, found through /proc while the
// helper — a subreaper — still holds them all below it, then its process
// group, then the helper. Killing only the helper (as Cmd.WaitDelay does)
// would leave whatever left its process group (setsid, a daemon) running,
// reparented out of reach.
type sweeper struct {
	mu    sync.Mutex
	gone  bool // the helper has exited: its pid may be reused once reaped
	timer *time.Timer
}

// arm sweeps pid's tree after d unless the helper exits first.
func (s *sweeper) arm(pid int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone || s.timer != nil {
		return
	}
	s.timer = time.AfterFunc(d, func() { s.sweep(pid) })
}

func (s *sweeper) sweep(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	// Killed parents' children are reparented to the helper, still alive:
	// repeat until none is left (bounded: a fork bomb is the cgroup's).
	for range 100 {
		d := Descendants(pid)
		if len(d) == 0 {
			break
		}
		signalAll(d, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// exited is called once the helper has exited, before it is reaped.
func (s *sweeper) exited() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
	if s.timer != nil {
		s.timer.Stop()
	}
}

// report returns the exit the helper reported in rest, the rest of its
// status lines, with the memory limit when the kernel killed for it.
func (p *Process) report(rest []byte) (Exit, bool) {
	for _, line := range bytes.Split(rest, []byte{'\n'}) {
		var m message
		if json.Unmarshal(line, &m) == nil && m.Exit != nil {
			exit := *m.Exit
			if p.slot != nil && p.slot.oomKilled() {
				exit.MemoryLimit = p.slot.memory
			}
			return exit, true
		}
	}
	return Exit{}, false
}

// Pid returns the command's process id (not the helper's).
func (p *Process) Pid() int { return p.pid }

// HelperPid returns the helper's process id, or 0 for a command that runs
// without one (in a cgroup).
func (p *Process) HelperPid() int {
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stop stops the tree: SIGTERM to every process, SIGKILL after the grace
// period. It returns at once; Done says when the tree is gone. Stopping a
// finished process does nothing.
func (p *Process) Stop() { p.stop() }

// Done is closed when the tree is gone: every process of it has exited and
// the command (and its helper, if any) is reaped — except a helper born the
// sandbox's init (ns.go), which is reaped in the background while the
// kernel tears its namespaces down.
func (p *Process) Done() <-chan struct{} { return p.done }

// Reaped is closed once the helper is reaped as well: for a helper born
// the sandbox's init, after Done, once the kernel has torn its namespaces
// down and initReapDelay has passed; then no process of the tree is left
// in its cgroup (Stdio.Slot), which can be removed without waiting. For
// any other process it is Done.
func (p *Process) Reaped() <-chan struct{} {
	if p.reaped != nil {
		return p.reaped
	}
	return p.done
}

// Exit returns how the command ended; it is valid once Done is closed.
func (p *Process) Exit() Exit {
	<-p.done
	return p.exit
}
