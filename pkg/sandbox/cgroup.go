package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/procgroup"
)

// Cgroups runs commands without a helper: each command is a direct child of
// the daemon, started (clone3 with CLONE_INTO_CGROUP) in a cgroup v2 of its
// own below the daemon's cgroup. The kernel keeps every process the command
// starts in that cgroup — also one that calls setsid and whose parent exits
// — so the tree is exactly the cgroup's members, without walking /proc; and
// cgroup.kill kills all of them at once, forks racing with the kill
// included. The command sees an ordinary process: its own pid in the
// daemon's pid namespace, signals and /proc as usual, in a process group
// of its own (a session of its own when it runs on a terminal or toold has
// a controlling terminal: see Start).
//
// The guarantees are the helper's (see the package documentation):
//
//   - When the command exits, its leftovers are stopped (unless
//     Spec.KeepTree); Exit.Leftovers counts them.
//   - Stop (or the end of the context) sends SIGTERM and SIGCONT (and SIGHUP
//     for terminals) to every member, then kills the cgroup after the grace
//     period. Done is closed once the command is reaped and the cgroup is
//     empty.
//   - Should the daemon die, a guard process (the helper in its guard mode,
//     one per Cgroups, started by OpenCgroups) stops every tree the same way
//     and removes the cgroups: it watches a pipe that only the daemon holds.
//
// Orphans of a command (processes whose parent exited) are re-parented to
// the daemon's nearest subreaper or init, which reaps them, as for any
// orphan; OpenCgroups refuses to run when the daemon is itself init or a
// subreaper (it would have to reap them), so that helpers are used then.
//
// Cgroups needs a writable cgroup v2 hierarchy (the unified one, also in
// hybrid mode) with cgroup.kill (Linux 5.14): root, or a delegated subtree
// (systemd Delegate=yes). It cannot confine commands: Landlock must be
// applied between fork and exec, which only the helper can do.
//
// A Cgroups is safe for concurrent use.
type Cgroups struct {
	root  string // the cgroup directory of this Cgroups; commands' cgroups are below
	grace time.Duration

	guard      *Process
	guardW     *os.File // closing it tells the guard the daemon is gone
	inotify    *os.File
	readerDone chan struct{}

	// startMu makes Close wait for Starts in flight: a clone into a cgroup
	// after Close killed them would outlive it.
	startMu sync.RWMutex
	// broken is set when the guard ended while the Cgroups is open: toold
	// would no longer be protected against its own death, so Start refuses
	// (ErrNoCgroups) and callers use helpers.
	broken atomic.Bool

	mu      sync.Mutex
	closed  bool
	seq     int
	idle    []*cgroup       // empty cgroups kept for reuse
	watches map[int]*cgroup // by inotify watch descriptor
}

// maxIdleCgroups bounds the empty cgroups kept for reuse: creating and
// removing one costs about as much as starting bash.
const maxIdleCgroups = 8

// cgroup is one command's cgroup.
type cgroup struct {
	dir string
	fd  int // the directory, for CLONE_INTO_CGROUP
	// wd is the inotify watch of its cgroup.events while a tree outlives
	// its command (watchEvents), or -1.
	wd int

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when cgroup.events changes
	// killed is set once cgroup.kill was written: such a cgroup is not
	// reused, because Linux 6.18 SIGKILLs every later CLONE_INTO_CGROUP
	// child of a cgroup that was ever killed (its kill sequence number
	// differs from the one the fork saw).
	killed bool
}

// CgroupConfig configures OpenCgroups.
type CgroupConfig struct {
	// Runner starts the guard process.
	Runner Runner
	// Grace is how long the guard gives processes between SIGTERM and
	// SIGKILL when the daemon died.
	Grace time.Duration
	// Probe, when its Path is set, is run in a cgroup to check that the
	// kernel starts commands there; it must exit with status 0.
	Probe Spec
}

// ErrNoCgroups is wrapped by OpenCgroups' errors: commands must run under
// helpers.
var ErrNoCgroups = errors.New("cgroups unavailable")

// OpenCgroups prepares a cgroup directory below the daemon's own cgroup,
// starts the guard and runs cfg.Probe. Its error (wrapping ErrNoCgroups)
// says why commands cannot run in cgroups here. Close removes it all.
func OpenCgroups(cfg CgroupConfig) (*Cgroups, error) {
	if os.Getpid() == 1 {
		return nil, fmt.Errorf("%w: toold is the init of its pid namespace and would have to reap the commands' orphans", ErrNoCgroups)
	}
	// PR_GET_CHILD_SUBREAPER stores the flag at the address given (the
	// pointer is converted in the Syscall expression itself, the one form
	// that keeps it valid); when it cannot be read, do not assume.
	var subreaper int32
	if _, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&subreaper)), 0); errno != 0 {
		return nil, fmt.Errorf("%w: cannot tell whether toold is a child subreaper: %v", ErrNoCgroups, errno)
	}
	if subreaper != 0 && !orphansReaped.Load() {
		// (AdoptOrphans reaps them: reaper.go.)
		return nil, fmt.Errorf("%w: toold is a child subreaper and would have to reap the commands' orphans", ErrNoCgroups)
	}
	resetIgnoredSignals()
	base, err := ownCgroupDir()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCgroups, err)
	}
	removeStale(base)
	var b [4]byte
	_, _ = rand.Read(b[:])
	root := filepath.Join(base, fmt.Sprintf("toold-%d-%s", os.Getpid(), hex.EncodeToString(b[:])))
	if err := os.Mkdir(root, 0o755); err != nil {
		return nil, fmt.Errorf("%w: creating a cgroup: %v", ErrNoCgroups, err)
	}
	c := &Cgroups{root: root, grace: cfg.Grace, watches: map[int]*cgroup{}, readerDone: make(chan struct{})}
	fail := func(err error) (*Cgroups, error) {
		c.shutdown()
		return nil, fmt.Errorf("%w: %v", ErrNoCgroups, err)
	}
	if _, err := os.Stat(filepath.Join(root, "cgroup.kill")); err != nil {
		return fail(fmt.Errorf("the kernel lacks cgroup.kill (Linux 5.14): %v", err))
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return fail(fmt.Errorf("inotify: %v", err))
	}
	c.inotify = os.NewFile(uintptr(fd), "inotify")
	go c.readEvents()
	if c.guard, c.guardW, err = cfg.Runner.startGuard(root, cfg.Grace); err != nil {
		return fail(fmt.Errorf("starting the guard: %v", err))
	}
	go c.watchGuard()
	if cfg.Probe.Path != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p, err := c.Start(ctx, cfg.Probe, Stdio{})
		if err != nil {
			return fail(fmt.Errorf("probe: %v", err))
		}
		if exit := p.Exit(); exit.Code != 0 || exit.Signal != 0 || exit.Err != nil {
			return fail(fmt.Errorf("probe: %s", exit))
		}
	}
	return c, nil
}

// GuardPid returns the process id of the guard.
func (c *Cgroups) GuardPid() int { return c.guard.HelperPid() }

// Dir returns the cgroup directory below which commands run.
func (c *Cgroups) Dir() string { return c.root }

// ownCgroupDir returns the directory of the calling process's cgroup in the
// cgroup v2 hierarchy.
func ownCgroupDir() (string, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	var mnt, mntRoot string
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		mntRoot, mnt = unescapeMount(f[3]), unescapeMount(f[4])
		break
	}
	if mnt == "" {
		return "", errors.New("no cgroup v2 hierarchy is mounted")
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var own string
	for _, line := range strings.Split(string(cg), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	if own == "" {
		return "", errors.New("the process is in no cgroup v2")
	}
	rel, err := filepath.Rel(mntRoot, own)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("the process's cgroup %s is not below the mounted %s", own, mntRoot)
	}
	return filepath.Join(mnt, rel), nil
}

// unescapeMount undoes mountinfo's octal escapes ("\040" for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeStale kills and removes the cgroups of daemons that are gone
// (toold-PID-* whose PID does not run), in case their guard died with them.
func removeStale(base string) {
	for _, dir := range staleDaemonDirs(base) {
		killTree(dir, 0)
	}
}

// staleDaemonDirs returns the toold-PID-* directories below base whose
// daemon is gone (no process PID; a PID that runs, or that toold may not
// signal — another user's — is kept).
func staleDaemonDirs(base string) []string {
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "toold-")
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || !errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			continue
		}
		out = append(out, filepath.Join(base, e.Name()))
	}
	return out
}

// Start starts spec's command in a cgroup of its own and returns once it
// runs. spec.Policy must be nil (confinement needs the helper). When ctx
// ends (or Stop is called) the tree is stopped: SIGTERM, then SIGKILL after
// spec.Grace. Done is closed once the command is reaped and the cgroup is
// empty.
func (c *Cgroups) Start(ctx context.Context, spec Spec, stdio Stdio) (*Process, error) {
	if spec.Policy != nil {
		return nil, errors.New("sandbox: a confined command needs a helper")
	}
	c.startMu.RLock()
	defer c.startMu.RUnlock()
	if c.broken.Load() {
		return nil, fmt.Errorf("%w: the guard of %s ended", ErrNoCgroups, c.root)
	}
	cg, err := c.get()
	if err != nil {
		return nil, err
	}
	env := spec.Env
	if env == nil {
		env = []string{} // nil would pass the daemon's environment on
	}
	cmd := &exec.Cmd{Path: spec.Path, Args: spec.Args, Env: env, Dir: spec.Dir}
	stdio.attach(cmd)
	// A session of its own where a terminal is involved: the command's
	// (it becomes the command's controlling terminal), or toold's, which a
	// command in toold's session could open as /dev/tty (and hang reading
	// it, or push input into it). Otherwise a process group of its own
	// does the same for signals (kill 0 reaches only the command's group)
	// at a fraction of the cost: setsid(2) makes the kernel create a
	// scheduler autogroup per session (CONFIG_SCHED_AUTOGROUP, on in most
	// distributions), 140–300 µs of every command's start on this machine
	// (bench/profiles-2026-11-27-outpath.md).
	session := stdio.Terminal || hasControllingTerminal()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:  session,
		Setpgid: !session,
		Setctty: stdio.Terminal,
		Ctty:    0,
		// No parent-death signal: the kernel would send it when the thread
		// that forked the command ends, not the daemon (and the sandbox
		// ends locked threads). Should the daemon die, the guard stops the
		// tree.
		UseCgroupFD: true,
		CgroupFD:    cg.fd,
	}
	if err := cmd.Start(); err != nil {
		c.put(cg, false)
		return nil, startErrorOf(spec, err)
	}
	p := &Process{pid: cmd.Process.Pid, cgroupDir: cg.dir, done: make(chan struct{}), stopReq: make(chan struct{})}
	p.stop = func() { p.stopOnce.Do(func() { close(p.stopReq) }) }
	unwatch := context.AfterFunc(ctx, p.stop)
	go func() {
		defer close(p.done)
		p.exit = c.supervise(cmd, cg, spec, p.stopReq)
		unwatch()
		// supervise returns only once it read the cgroup empty: no
		// second read before the command counts as done.
		c.put(cg, true)
	}()
	return p, nil
}

// hasControllingTerminal reports whether toold has a controlling terminal
// (when it cannot tell, that it has). A session leader without one (toold
// under systemd) acquires one by opening a terminal without O_NOCTTY, so
// it asks again at every start; a process that leads no session never
// acquires one, so once it had none the answer is kept.
func hasControllingTerminal() bool {
	if noTerminalForGood.Load() {
		return false
	}
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch err {
	case nil:
		unix.Close(fd)
		return true
	case unix.ENXIO: // no controlling terminal
		if sid, err := unix.Getsid(0); err == nil && sid != os.Getpid() {
			noTerminalForGood.Store(true)
		}
		return false
	case unix.ENOENT: // no /dev/tty to open one by, for the commands either
		return false
	}
	return true
}

// noTerminalForGood: toold has no controlling terminal and, leading no
// session, cannot acquire one (see hasControllingTerminal).
var noTerminalForGood atomic.Bool

// startErrorOf explains a failed start as the helper does.
func startErrorOf(spec Spec, err error) error {
	if spec.Dir != "" && errors.Is(err, syscall.ENOENT) {
		if _, serr := os.Stat(spec.Dir); serr != nil {
			return &StartError{Msg: fmt.Sprintf("working directory %s: %v", spec.Dir, serr)}
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		return &StartError{Msg: fmt.Sprintf("working directory %s: %v", spec.Dir, pe.Err)}
	}
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &StartError{Msg: fmt.Sprintf("starting %s: %v", spec.Path, err)}
}

// supervise waits for the command and its tree: it stops the leftovers
// when the command exits (unless spec.KeepTree), stops the tree on request,
// and returns once the command is reaped and the cgroup is empty.
func (c *Cgroups) supervise(cmd *exec.Cmd, cg *cgroup, spec Spec, stopReq <-chan struct{}) Exit {
	cmdDone := make(chan struct{})
	go func() { _ = procgroup.Wait(cmd); close(cmdDone) }() // no OS thread per command
	var (
		exit     Exit
		exited   bool
		stopping bool
		killAt   <-chan time.Time
		killTick <-chan time.Time
	)
	// Once the command exited with its tree still running, or a stop was
	// asked for, changes of cgroup.events wake this loop through inotify;
	// the ticker is a safety net should an event be lost. Until then the
	// command's exit (its pidfd) is what wakes it: a watch kept on every
	// command's cgroup woke toold twice per command for nothing (the
	// populated flag set at the clone and cleared at the exit, each a
	// kernel worker's event and a toold thread's wake-up while the command
	// runs or toold answers; bench/profiles-2026-11-28-run7.md).
	recheck := time.NewTicker(time.Second)
	defer recheck.Stop()
	watching := false
	stop := func() {
		stopping = true
		sigs := []syscall.Signal{syscall.SIGTERM, syscall.SIGCONT}
		if spec.Terminal {
			sigs = append(sigs, syscall.SIGHUP)
		}
		signalAll(cg.members(), sigs...)
		killAt = time.After(spec.Grace)
	}
	for {
		if (exited || stopping) && !watching {
			watching = true
			if err := c.watchEvents(cg); err != nil {
				recheck.Reset(20 * time.Millisecond) // no events: poll
			}
		}
		// Take the channel before reading the state, so that no change
		// between the two is missed.
		changed := cg.watch()
		if exited && !cg.populated() {
			return exit
		}
		select {
		case <-cmdDone:
			cmdDone = nil
			exited = true
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			exit.Code = ws.ExitStatus()
			if ws.Signaled() {
				exit.Code, exit.Signal = -1, ws.Signal()
			}
			if !stopping {
				if !cg.populated() {
					return exit // the common case: nothing left
				}
				exit.Leftovers = len(cg.members())
				if !spec.KeepTree {
					stop()
				}
			}
		case <-changed:
		case <-recheck.C:
		case <-stopReq:
			stopReq = nil
			if !stopping {
				exit.Stopped = true
				stop()
			}
		case <-killAt:
			killAt = nil
			cg.kill()
			// Should the kill not empty the cgroup (it is atomic, so this
			// is a safety net), repeat it.
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			killTick = t.C
		case <-killTick:
			cg.kill()
		}
	}
}

// get returns an empty cgroup: an idle one, or a new one.
func (c *Cgroups) get() (*cgroup, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("sandbox: the cgroups are closed")
	}
	if n := len(c.idle); n > 0 {
		cg := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		// Idle cgroups hold no descriptor (see put).
		fd, err := unix.Open(cg.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			c.remove(cg)
			return nil, fmt.Errorf("opening the command's cgroup: %w", err)
		}
		cg.fd = fd
		return cg, nil
	}
	c.seq++
	dir := filepath.Join(c.root, "c"+strconv.Itoa(c.seq))
	c.mu.Unlock()
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the command's cgroup: %w", err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("opening the command's cgroup: %w", err)
	}
	return &cgroup{dir: dir, fd: fd, wd: -1, changed: make(chan struct{})}, nil
}

// watchEvents makes changes of cg's cgroup.events wake cg's watchers
// (cgroup.watch) until unwatchEvents. Only supervise, while it owns cg,
// calls them.
func (c *Cgroups) watchEvents(cg *cgroup) error {
	if cg.wd >= 0 {
		return nil
	}
	wd, err := unix.InotifyAddWatch(c.inotifyFd(), filepath.Join(cg.dir, "cgroup.events"), unix.IN_MODIFY)
	if err != nil {
		return fmt.Errorf("watching the command's cgroup: %w", err)
	}
	c.mu.Lock()
	cg.wd = wd
	c.watches[wd] = cg
	c.mu.Unlock()
	return nil
}

// unwatchEvents ends watchEvents' watch, if any.
func (c *Cgroups) unwatchEvents(cg *cgroup) {
	if cg.wd < 0 {
		return
	}
	c.mu.Lock()
	if c.watches[cg.wd] == cg {
		delete(c.watches, cg.wd)
		// Removing the directory ended the watch, unless rmdir failed.
		_, _ = unix.InotifyRmWatch(c.inotifyFd(), uint32(cg.wd))
	}
	cg.wd = -1
	c.mu.Unlock()
}

func (c *Cgroups) inotifyFd() int {
	var fd int
	if rc, err := c.inotify.SyscallConn(); err == nil {
		_ = rc.Control(func(f uintptr) { fd = int(f) })
	}
	return fd
}

// put takes back a cgroup whose command ended: it is kept for reuse when
// empty, otherwise (or beyond maxIdleCgroups) removed. empty says the
// caller has just read it empty (supervise's last read); otherwise put
// reads it.
func (c *Cgroups) put(cg *cgroup, empty bool) {
	c.unwatchEvents(cg)
	reusable := !cg.wasKilled() && (empty || !cg.populated())
	c.mu.Lock()
	if reusable && !c.closed && len(c.idle) < maxIdleCgroups {
		// An idle cgroup keeps no descriptor open: toold's descriptors
		// count only what runs.
		unix.Close(cg.fd)
		cg.fd = -1
		c.idle = append(c.idle, cg)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.remove(cg)
}

// remove kills what is left in a cgroup and deletes it.
func (c *Cgroups) remove(cg *cgroup) {
	killTree(cg.dir, 0)
	c.unwatchEvents(cg)
	if cg.fd >= 0 {
		unix.Close(cg.fd)
		cg.fd = -1
	}
}

// watchGuard marks the Cgroups broken when the guard ends while it is open
// (it was killed, or it got SIGTERM and stopped every tree).
func (c *Cgroups) watchGuard() {
	<-c.guard.Done()
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if !closed {
		c.broken.Store(true)
	}
}

// Broken reports whether the Cgroups can no longer start commands (its
// guard ended, or its inotify failed); Start then fails with ErrNoCgroups.
func (c *Cgroups) Broken() bool { return c.broken.Load() }

// readEvents dispatches inotify events to the cgroups' watchers until the
// inotify file is closed.
func (c *Cgroups) readEvents() {
	defer close(c.readerDone)
	buf := make([]byte, 4096)
	for {
		n, err := c.inotify.Read(buf)
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				// Events were lost: every watcher looks again.
				c.notifyAll()
				off += unix.SizeofInotifyEvent + int(ev.Len)
				continue
			}
			c.mu.Lock()
			cg := c.watches[int(ev.Wd)]
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(c.watches, int(ev.Wd))
			}
			c.mu.Unlock()
			if cg != nil {
				cg.notify()
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				// No more events: refuse new commands, and let the
				// running ones see their state (supervise also polls).
				c.broken.Store(true)
				c.notifyAll()
			}
			return
		}
	}
}

func (c *Cgroups) notifyAll() {
	c.mu.Lock()
	cgs := make([]*cgroup, 0, len(c.watches))
	for _, cg := range c.watches {
		cgs = append(cgs, cg)
	}
	c.mu.Unlock()
	for _, cg := range cgs {
		cg.notify()
	}
}

// Close stops whatever still runs in the cgroups (SIGTERM, SIGKILL after
// the grace period), removes them, and ends the guard. Processes started by
// Start must have been waited for; Close is for the daemon's shutdown.
func (c *Cgroups) Close() error {
	c.startMu.Lock() // no Start in flight, and none after
	defer c.startMu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.idle = nil // they hold no descriptor; shutdown removes them
	c.mu.Unlock()
	c.shutdown()
	return nil
}

func (c *Cgroups) shutdown() {
	killTree(c.root, c.grace)
	if c.guardW != nil {
		c.guardW.Close() // the guard finds nothing left and exits
		select {
		case <-c.guard.Done():
		case <-time.After(c.grace + helperMargin):
			c.guard.Stop()
		}
	}
	if c.inotify != nil {
		c.inotify.Close()
		<-c.readerDone
	}
}

func (cg *cgroup) watch() <-chan struct{} {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	return cg.changed
}

func (cg *cgroup) notify() {
	cg.mu.Lock()
	close(cg.changed)
	cg.changed = make(chan struct{})
	cg.mu.Unlock()
}

// populated reports whether a process runs in the cgroup (or below it). It
// reads cgroup.events through the cgroup's directory fd with plain system
// calls: os.ReadFile would register the (pollable) file with the runtime's
// poller and unregister it, which costs more than the read.
func (cg *cgroup) populated() bool {
	fd, err := unix.Openat(cg.fd, "cgroup.events", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return !gone(err)
	}
	var b [128]byte
	n, err := unix.Read(fd, b[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return !gone(err)
	}
	return eventsPopulated(b[:n])
}

// gone reports whether err says the cgroup no longer exists. Any other
// failure to read its state (EMFILE, ...) counts as populated: a tree is
// never declared gone because toold could not look.
func gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV)
}

func (cg *cgroup) members() []int { return cgroupProcs(cg.dir) }

func (cg *cgroup) kill() {
	cg.mu.Lock()
	cg.killed = true
	cg.mu.Unlock()
	_ = os.WriteFile(filepath.Join(cg.dir, "cgroup.kill"), []byte("1"), 0)
}

func (cg *cgroup) wasKilled() bool {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	return cg.killed
}

// populated reads cgroup.events; an unreadable file counts as empty (the
// cgroup is gone).
func populated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return !gone(err)
	}
	return eventsPopulated(b)
}

// eventsPopulated parses cgroup.events' "populated" key.
func eventsPopulated(b []byte) bool {
	i := bytes.Index(b, []byte("populated "))
	return i >= 0 && i+10 < len(b) && b[i+10] == '1'
}

// cgroupProcs returns the processes in dir and the cgroups below it.
func cgroupProcs(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		f, err := os.Open(filepath.Join(path, "cgroup.procs"))
		if err != nil {
			return nil
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if pid, err := strconv.Atoi(sc.Text()); err == nil {
				pids = append(pids, pid)
			}
		}
		f.Close()
		return nil
	})
	return pids
}

// killTree stops every process in dir and below (SIGTERM and SIGCONT,
// then cgroup.kill after grace, at once when grace is 0), waits for the
// cgroups to empty, and removes them.
func killTree(dir string, grace time.Duration) {
	if pids := cgroupProcs(dir); len(pids) > 0 && grace > 0 {
		signalAll(pids, syscall.SIGTERM, syscall.SIGCONT)
		waitEmpty(dir, grace)
	}
	for i := 0; populated(dir) && i < 50; i++ {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		waitEmpty(dir, 100*time.Millisecond)
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	slices.Reverse(dirs) // children first
	for _, d := range dirs {
		_ = os.Remove(d)
	}
}

// waitEmpty polls until no process runs in dir or d passes.
func waitEmpty(dir string, d time.Duration) {
	deadline := time.Now().Add(d)
	for populated(dir) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// Members returns the processes of the command's tree while it runs: the
// members of its cgroup. It returns nil for a command under a helper
// (Descendants of HelperPid finds those).
func (p *Process) Members() []int {
	if p.cgroupDir == "" {
		return nil
	}
	select {
	case <-p.done:
		return nil // the cgroup may already run another command
	default:
	}
	return cgroupProcs(p.cgroupDir)
}

var resetSignalsOnce sync.Once

// resetIgnoredSignals makes SIGHUP and SIGINT caught instead of ignored
// when toold was started with them ignored (nohup): a command started
// straight from toold inherits ignored signals, while caught ones are reset
// to their defaults at exec, as the helper does for its command. toold
// still ignores them: what is caught is dropped.
func resetIgnoredSignals() {
	resetSignalsOnce.Do(func() {
		var sigs []os.Signal
		for _, s := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
			if signal.Ignored(s) {
				sigs = append(sigs, s)
			}
		}
		if len(sigs) == 0 {
			return
		}
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, sigs...)
		go func() {
			for range ch {
			}
		}()
	})
}
