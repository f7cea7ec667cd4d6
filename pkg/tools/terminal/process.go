package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/tools"
)

// Why a process tree was stopped before it ended on its own.
const (
	stopTimeout  = "timeout"
	stopIdle     = "idle"
	stopKilled   = "killed"
	stopCanceled = "canceled"
	stopDeadline = "deadline"
	stopShutdown = "shutdown"
)

// maxEndedPerConversation bounds the ended background processes a
// conversation's list keeps; their output stays in the store.
const maxEndedPerConversation = 32

// commandSpec is what starts a command.
type commandSpec struct {
	conv, callID string
	command      string
	workingDir   string
	env          map[string]string
	timeout      time.Duration // 0: none (the call's own deadline still applies)
	idle         time.Duration // 0: none
	background   bool
	// stdin, when set, is fed to the command's standard input (the
	// client's Input data); otherwise it reads /dev/null.
	stdin io.ReadCloser
	// unsandboxed runs the command without the sandbox: a person approved
	// this one call outside it (tools.Call.Unsandboxed).
	unsandboxed bool
}

// process is a command running under a helper: the command of a
// run_command call, or a background process. Its goroutine (run) owns the
// helper and the two output readers; done is closed when the tree is gone,
// every byte of output is recorded, and the record is finished.
type process struct {
	m       *Manager
	id      string
	conv    string
	callID  string
	command string
	dir     string // relative to the workspace
	// readOnly are the git directories read-only in its view
	// (sandbox.Policy.ReadOnly), for gitHint.
	readOnly   []string
	background bool
	timeout    time.Duration
	idle       time.Duration
	started    time.Time
	h          *sandbox.Process
	rec        *record
	// sink receives output chunks while a foreground call runs; nil for
	// background processes. After a failed Output it is no longer used.
	sink       *tools.Sink
	sinkFailed atomic.Bool
	// lastOutput (unix nanoseconds) is when output was last read or
	// delivered; delivering counts readers blocked in sink.Output. A
	// command is idle when no reader delivers and lastOutput is old: time
	// spent waiting for a slow client does not count as idle.
	lastOutput atomic.Int64
	delivering atomic.Int32
	done       chan struct{}

	// shimDir is the directory of a process under a shim (survive.go),
	// or "".
	shimDir string
	// journaled: the Manager's call journal records this foreground
	// command as running (survive.go), until end.
	journaled bool

	mu     sync.Mutex
	why    string // why it was stopped, if it was
	exit   sandbox.Exit
	ended  time.Time
	cursor int64 // where the model's next get_output starts
}

// start starts a command. A foreground command is bound to ctx (the call's
// context) and sends its output to sink as it comes; a background one
// lives until it exits, is killed, or the Manager closes.
func (m *Manager) start(ctx context.Context, cs commandSpec, sink *tools.Sink) (*process, error) {
	abs, rel, err := m.resolveDir(cs.workingDir)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(cs.env); err != nil {
		return nil, err
	}
	if err := checkSyntax(m.shell, cs.command); err != nil {
		return nil, err
	}
	// Reserve the process's place (and its goroutine's) before starting it,
	// so that Close either refuses it here or waits for it.
	m.mu.Lock()
	if err := m.enterLocked(); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	if cs.background {
		mine, all := 0, 0
		for _, p := range m.procs {
			if p.background && !p.isDone() {
				all++
				if p.conv == cs.conv {
					mine++
				}
			}
		}
		if mine >= m.cfg.MaxProcesses || all >= 16*m.cfg.MaxProcesses {
			m.mu.Unlock()
			return nil, errdefs.New(errdefs.ErrResourceExhausted,
				"too many background processes are running (limit %d per conversation); kill one you no longer need (list_processes shows them)", m.cfg.MaxProcesses)
		}
	}
	m.wg.Add(1)
	m.mu.Unlock()
	p, err := m.launch(ctx, cs, abs, rel, sink)
	if err != nil {
		m.wg.Done()
		return nil, err
	}
	return p, nil
}

func (m *Manager) launch(ctx context.Context, cs commandSpec, abs, rel string, sink *tools.Sink) (*process, error) {
	if cs.background && m.shims() {
		return m.launchShim(ctx, cs, abs, rel)
	}
	rec := m.store.create(cs.conv, cs.callID, cs.command)
	outR, outW, err := outputPipe()
	if err != nil {
		rec.finish("did not start")
		return nil, errdefs.Wrap(errdefs.ErrResourceExhausted, err, "cannot create a pipe: %v", err)
	}
	errR, errW, err := outputPipe()
	if err != nil {
		outR.Close()
		outW.Close()
		rec.finish("did not start")
		return nil, errdefs.Wrap(errdefs.ErrResourceExhausted, err, "cannot create a pipe: %v", err)
	}
	// A larger pipe means fewer wake-ups for a fast producer (best effort:
	// the largest the kernel allows up to pipeSize).
	growPipe(outW)
	// The tree is stopped when its context ends: the call's (foreground) or
	// the Manager's (background, and foreground at shutdown).
	parent := m.ctx
	if !cs.background {
		parent = ctx
	}
	pctx, cancel := context.WithCancel(parent)
	stopOnClose := context.AfterFunc(m.ctx, cancel)
	spec := sandbox.Spec{
		Path:   m.shell,
		Args:   []string{filepath.Base(m.shell), "-c", cs.command},
		Env:    m.commandEnv(cs.env),
		Dir:    abs,
		Grace:  m.cfg.KillGrace,
		Policy: m.policyFor(),
		// A background process lives as long as its tree: a server that
		// daemonizes keeps running under it.
		KeepTree: cs.background,
	}
	if cs.unsandboxed {
		spec.Policy = nil
	}
	stdio := sandbox.Stdio{Stdout: outW, Stderr: errW}
	var inW *os.File
	if cs.stdin != nil {
		var inR *os.File
		if inR, inW, err = os.Pipe(); err != nil {
			stopOnClose()
			cancel()
			outR.Close()
			errR.Close()
			outW.Close()
			errW.Close()
			rec.finish("did not start")
			return nil, errdefs.Wrap(errdefs.ErrResourceExhausted, err, "cannot create a pipe: %v", err)
		}
		stdio.Stdin = inR
		defer inR.Close()
	}
	var h *sandbox.Process
	err = sandbox.ErrNoCgroups
	if m.cgroups != nil && m.policy == nil {
		h, err = m.cgroups.Start(pctx, spec, stdio)
		if errors.Is(err, sandbox.ErrNoCgroups) {
			m.cgroupsFailed.Do(func() {
				m.cfg.Logger.Warn("terminal: commands run under a helper process from now on", "reason", err)
			})
		}
	}
	if errors.Is(err, sandbox.ErrNoCgroups) {
		h, err = m.startHelper(pctx, spec, stdio)
	}
	outW.Close()
	errW.Close()
	if err != nil {
		stopOnClose()
		cancel()
		outR.Close()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		rec.finish("did not start")
		return nil, m.startError(ctx, err)
	}
	if inW != nil {
		go feedStdin(inW, cs.stdin)
	}
	now := time.Now()
	p := &process{
		m: m, id: newID("proc-"), conv: cs.conv, callID: cs.callID, command: cs.command, dir: rel,
		background: cs.background, timeout: cs.timeout, idle: cs.idle, started: now,
		h: h, rec: rec, sink: sink, done: make(chan struct{}),
	}
	if spec.Policy != nil {
		p.readOnly = spec.Policy.ReadOnly
	}
	p.lastOutput.Store(now.UnixNano())
	if m.shims() {
		// Should toold die, its helper stops the command; the next toold
		// reports the call as interrupted (survive.go).
		p.journaled = m.journal.start(p)
	}
	m.mu.Lock()
	m.procs[p.id] = p
	m.mu.Unlock()
	go p.run(outR, errR, func() { stopOnClose(); cancel() })
	m.cfg.Logger.Debug("command started", "process_id", p.id, "pid", h.Pid(), "conversation_id", cs.conv,
		"call_id", cs.callID, "background", cs.background)
	return p, nil
}

// commandVars are set for every command (not for sessions, which have a
// terminal).
var commandVars = map[string]string{"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}

// commandEnv returns a command's environment: the Manager's, commandVars,
// then the call's extra. Without extras it is the same list for every
// command, built once (m.env is settled when NewManager returns); callers
// do not modify it.
func (m *Manager) commandEnv(extra map[string]string) []string {
	if len(extra) > 0 {
		return environ(m.env, commandVars, extra)
	}
	m.cmdEnvOnce.Do(func() { m.cmdEnv = environ(m.env, commandVars) })
	return m.cmdEnv
}

// feedStdin copies the client's input to the command's stdin until the
// client closes it (EOF: the command then reads EOF) or the command stops
// reading (the pipe breaks); then it stops reading the client's input, so
// what comes after is counted as unread.
func feedStdin(w *os.File, in io.ReadCloser) {
	_, _ = io.Copy(w, in)
	w.Close()
	in.Close()
}

// startError turns a failure to start into an error for the model.
func (m *Manager) startError(ctx context.Context, err error) error {
	var se *sandbox.StartError
	switch {
	case errors.As(err, &se):
		return errdefs.Wrap(errdefs.ErrFailed, err, "the command could not start: %s", se.Msg)
	case ctx.Err() != nil:
		return errdefs.Wrap(errdefs.ErrCanceled, err, "the call ended before the command started")
	case m.ctx.Err() != nil:
		return errdefs.Wrap(errdefs.ErrUnavailable, err, "toold is shutting down and starts no new processes")
	}
	m.cfg.Logger.Error("command helper failed", "err", err)
	return errdefs.Wrap(errdefs.ErrInternal, err, "internal error; the details are in the toold log")
}

// run is the process's goroutine. It reads the output, enforces the
// timeouts, and finishes the record when the tree is gone.
func (p *process) run(outR, errR *os.File, release func()) {
	defer p.m.wg.Done()
	// The last reader to reach EOF closes readersDone (no goroutine of its
	// own waits for them: one wake-up less at every command's end).
	readersDone := make(chan struct{})
	var readers atomic.Int32
	readers.Store(2)
	readerDone := func() {
		if readers.Add(-1) == 0 {
			close(readersDone)
		}
	}
	go func() { defer readerDone(); p.pump(tools.Stdout, outR, readSize) }()
	go func() { defer readerDone(); p.pump(tools.Stderr, errR, 64<<10) }()

	p.watch(nil)
	// The tree is gone, so every write end of the pipes is closed and the
	// readers reach EOF (usually they have: the kernel reports the hang-up
	// with the exit). Should a process have escaped holding a pipe, stop
	// reading after a moment — a moment of reading: while a reader waits
	// for the client to take what the tree wrote (a slow reader, a stream
	// dropped and not yet resumed), the pipes still hold the command's
	// output, which closing them would lose (the call then ended
	// successfully with up to a pipe's worth missing). What the readers
	// deliver beyond what the pipes and their buffers can hold once the
	// tree is gone is an escaped writer's, and stops them regardless.
	select {
	case <-readersDone:
	default:
		gone := p.rec.totalHint.Load()
		t := time.NewTimer(readersGrace)
	wait:
		for {
			select {
			case <-readersDone:
				break wait
			case <-t.C:
				// Reading on: a reader waits for the client now, or the
				// pipes still hold output for a reader between two
				// deliveries (sampling delivering alone closed the pipes
				// in that gap, output still in them), within what they
				// could hold when the tree went.
				if (p.delivering.Load() > 0 || pipeHolds(outR) || pipeHolds(errR)) && p.rec.totalHint.Load()-gone <= 2*(pipeSize+readSize) {
					t.Reset(readersGrace)
					continue
				}
				outR.Close()
				errR.Close()
				<-readersDone
				break wait
			}
		}
		t.Stop()
	}
	outR.Close()
	errR.Close()
	release()
	p.end()
}

// watch waits until the tree is gone, stopping it at its timeouts; it
// returns false when detach was closed first.
func (p *process) watch(detach <-chan struct{}) bool {
	var wall, tick <-chan time.Time
	if p.timeout > 0 {
		// Counted from the start (an adopted process's, too).
		t := time.NewTimer(max(0, p.timeout-time.Since(p.started)))
		defer t.Stop()
		wall = t.C
	}
	if p.idle > 0 {
		t := time.NewTicker(min(p.idle/4, 250*time.Millisecond))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-p.h.Done():
			return true
		case <-detach:
			return false
		case <-wall:
			wall, tick = nil, nil
			p.stop(stopTimeout)
		case <-tick:
			quiet := time.Since(time.Unix(0, p.lastOutput.Load()))
			if p.delivering.Load() == 0 && quiet >= p.idle {
				wall, tick = nil, nil
				p.stop(stopIdle)
			}
		}
	}
}

// end finishes the record of a process whose tree is gone.
func (p *process) end() {
	if p.journaled {
		p.m.journal.end(p.id)
	}
	exit := p.h.Exit()
	p.mu.Lock()
	if exit.Stopped && p.why == "" {
		p.why = stopCanceled
		if p.m.ctx.Err() != nil {
			p.why = stopShutdown
		}
	}
	p.exit, p.ended = exit, time.Now()
	outcome := p.outcomeLocked()
	p.mu.Unlock()
	p.rec.finish(outcome)
	p.m.cfg.Logger.Debug("command ended", "process_id", p.id, "outcome", outcome)
	close(p.done)
	p.m.forget(p)
}

// pump copies one output stream into the record and, for a foreground
// command, to the call's sink (which blocks while the client is slow: the
// command then blocks on its pipe).
//
// Once a command has written pumpBatchAfter bytes, a read that found the
// pipe less than half as full as the buffer is followed by a pause of
// pumpGather and a second read of what came meanwhile, so that a fast
// producer is read in large pieces. Without it toold read every write(2)
// of the command apart (head -c from /dev/zero writes 8 KiB at a time):
// 14,600–20,000 reads for 200 MB, each waking the reader and the stream's
// sender, where the pipe holds 1 MiB (bench/profiles-2026-11-27-stream.md).
// The first bytes of every command, and what a slow one writes later
// after a pause, still go out at once; a fast one's delivery waits at most
// pumpGather more.
//
// A foreground command's stdout is read into buffers of the sink's pool
// (tools.OutputBuffer), each handed to the sink once read (Sink.Adopt):
// the event log keeps the buffer as the chunk the client is sent, where it
// copied every byte (bench/profiles-2026-11-28-stream3.md). The record
// (file, head and tail) copies what it keeps before the hand-over.
func (p *process) pump(stream tools.Stream, r *os.File, size int) {
	adopt := p.sink != nil && size == tools.OutputBufferSize
	var buf []byte
	if adopt {
		buf = tools.OutputBuffer()[:size]
	} else {
		buf = getReadBuf(size)
	}
	defer func() {
		if adopt {
			tools.FreeBuffer(buf)
		} else {
			putReadBuf(buf)
		}
	}()
	rc, _ := r.SyscallConn()
	var total int
	for {
		n, err := r.Read(buf)
		if n > 0 && n < len(buf)/2 && err == nil && rc != nil && total >= pumpBatchAfter {
			time.Sleep(pumpGather)
			n += readNow(rc, buf[n:])
		}
		total += n
		if n > 0 {
			p.lastOutput.Store(time.Now().UnixNano())
			p.rec.write(stream, buf[:n])
			if p.sink != nil && !p.sinkFailed.Load() {
				p.delivering.Add(1)
				var err error
				if adopt {
					err = p.sink.Adopt(stream, buf[:n])
					buf = tools.OutputBuffer()[:size]
				} else {
					err = p.sink.Output(stream, buf[:n])
				}
				if err != nil {
					p.sinkFailed.Store(true)
				}
				p.delivering.Add(-1)
				p.lastOutput.Store(time.Now().UnixNano())
			}
		}
		if err != nil {
			return
		}
	}
}

// pipeHolds reports whether bytes wait in the pipe r reads (FIONREAD,
// which Linux names TIOCINQ).
func pipeHolds(r *os.File) bool {
	rc, err := r.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	return n > 0
}

// readersGrace is how long the readers of a command whose tree is gone may
// read on, not counting time spent waiting for the client (see run).
const readersGrace = 2 * time.Second

// The pump's batching of a fast producer's output (see pump).
const (
	pumpBatchAfter = 256 << 10
	pumpGather     = 200 * time.Microsecond
)

// readNow reads what the pipe holds into p without waiting for more.
func readNow(rc syscall.RawConn, p []byte) int {
	n := 0
	_ = rc.Read(func(fd uintptr) bool {
		for n < len(p) {
			m, err := unix.Read(int(fd), p[n:])
			if m <= 0 || err != nil {
				break
			}
			n += m
		}
		return true // never wait: what is not there is read next time
	})
	return n
}

// stop stops the tree for the given reason (the first reason given wins).
func (p *process) stop(why string) {
	p.mu.Lock()
	if p.why == "" {
		p.why = why
	}
	p.mu.Unlock()
	p.h.Stop()
}

func (p *process) isDone() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// outcomeLocked says how the process ended, for the model.
func (p *process) outcomeLocked() string {
	var s string
	switch p.why {
	case stopTimeout:
		s = fmt.Sprintf("stopped after its timeout of %s", seconds(p.timeout))
	case stopIdle:
		s = fmt.Sprintf("stopped after %s without output (idle_timeout)", seconds(p.idle))
	case stopKilled:
		s = "stopped by kill"
	case stopCanceled:
		s = "stopped because the call was canceled"
	case stopDeadline:
		s = "stopped at the call's deadline"
	case stopShutdown:
		s = "stopped because toold shut down"
	default:
		s = p.exit.String()
	}
	if p.why != "" {
		s += " (" + p.exit.String() + ")"
	}
	switch {
	case p.exit.Leftovers > 0 && p.background:
		s += fmt.Sprintf("; %d process(es) it started ran on after it exited", p.exit.Leftovers)
	case p.exit.Leftovers > 0:
		s += fmt.Sprintf("; %d process(es) it left running were stopped (use is_background for servers)", p.exit.Leftovers)
	}
	return s
}

// forget drops a foreground process, and the oldest ended background
// processes of its conversation beyond maxEndedPerConversation.
func (m *Manager) forget(p *process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !p.background {
		delete(m.procs, p.id)
		return
	}
	var ended []*process
	for _, q := range m.procs {
		if q.background && q.conv == p.conv && q.isDone() {
			ended = append(ended, q)
		}
	}
	if len(ended) <= maxEndedPerConversation {
		return
	}
	slices.SortFunc(ended, func(a, b *process) int { return a.started.Compare(b.started) })
	for _, q := range ended[:len(ended)-maxEndedPerConversation] {
		delete(m.procs, q.id)
		m.removeShimDir(q.shimDir)
	}
}

// process returns a background process of conversation conv.
func (m *Manager) process(conv, id string) (*process, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.procs[id]
	if !ok || !p.background || p.conv != conv {
		return nil, errdefs.Failed("no background process %q in this conversation; list_processes shows them", id)
	}
	return p, nil
}

// ProcessInfo describes a background process.
type ProcessInfo struct {
	ID, CallID, Command, Dir string
	PID                      int
	// State is "running" or "exited".
	State   string
	Started time.Time
	// Ended is zero while it runs.
	Ended time.Time
	// Outcome says how it ended ("exit code 0", "stopped by kill (...)").
	Outcome     string
	ExitCode    int
	OutputBytes int64
}

// processes lists the background processes of conv, oldest first.
func (m *Manager) processes(conv string) []ProcessInfo {
	m.mu.Lock()
	var ps []*process
	for _, p := range m.procs {
		if p.background && p.conv == conv {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(ps, func(a, b *process) int { return a.started.Compare(b.started) })
	out := make([]ProcessInfo, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.info())
	}
	return out
}

func (p *process) info() ProcessInfo {
	in := ProcessInfo{ID: p.id, CallID: p.callID, Command: p.command, Dir: p.dir, PID: p.h.Pid(), State: "running", Started: p.started}
	if p.isDone() {
		p.mu.Lock()
		in.State, in.Ended, in.Outcome, in.ExitCode = "exited", p.ended, p.outcomeLocked(), p.exit.Code
		p.mu.Unlock()
	}
	in.OutputBytes = p.rec.snap().total
	return in
}

// seconds formats a duration for the model: "10s", "1.5s", "2m0s".
func seconds(d time.Duration) string { return d.Round(time.Millisecond).String() }

// pipeSize is the capacity toold asks for a command's stdout pipe;
// readSize is how much it reads at once. A fast producer then wakes toold
// about 4 times per MiB instead of 16.
const (
	pipeSize = 1 << 20
	readSize = tools.OutputBufferSize
)

// pipeMaxSizeFile holds the largest pipe size a process without
// CAP_SYS_RESOURCE may ask for (1 MiB by default; an operator or a
// container runtime may lower it).
const pipeMaxSizeFile = "/proc/sys/fs/pipe-max-size"

// minPipeSize is the size every pipe starts with: growing stops there.
const minPipeSize = 64 << 10

// growPipe makes f's pipe pipeSize bytes, or the largest size the kernel
// allows below it; it leaves the pipe as it is when even that is refused
// (the command still runs, with more wake-ups). Best effort by design.
func growPipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		growTo(func(n int) error {
			_, err := unix.FcntlInt(fd, unix.F_SETPIPE_SZ, n)
			return err
		}, pipeSize, pipeMaxSize)
	})
}

// growTo asks set for want; when the kernel refuses (EPERM above
// pipe-max-size without CAP_SYS_RESOURCE, or once the user's pipes exceed
// fs.pipe-user-pages-soft), it asks for max() — the limit, read only then,
// so the common case costs one fcntl — and then halves the size until it
// is accepted or reaches minPipeSize. It returns the size granted, 0 when
// none was. A 64 KiB pipe costs about 3 times the CPU of a 1 MiB one on a
// 200 MB stream (bench/profiles-2026-11-28-stream3.md).
func growTo(set func(int) error, want int, max func() int) int {
	if set(want) == nil {
		return want
	}
	n := want / 2
	if m := max(); m > 0 && m < want {
		n = m
	}
	for ; n > minPipeSize; n /= 2 {
		if set(n) == nil {
			return n
		}
	}
	return 0
}

// pipeMaxSize reads pipeMaxSizeFile; 0 when it cannot.
func pipeMaxSize() int {
	b, err := os.ReadFile(pipeMaxSizeFile)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return n
}

// outputPipe returns a pipe for a command's output: the read end in the
// runtime's poller (the pump reads it), the write end blocking and outside
// it. The write end is only handed to the command and closed once it has
// started, so registering it with the poller, as os.Pipe does, cost an
// fcntl and two epoll_ctl calls per pipe for nothing — on the path of
// every command (pollDesc.init was a fifth of toold's CPU in the
// run_command bench row).
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	// NewFile puts a non-blocking descriptor in the poller, and leaves a
	// blocking one out of it.
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// readBufs recycles the read buffers of output nobody is sent (stderr's
// 64 KiB, a background command's stdout; a foreground stdout reads into
// tools.OutputBuffer, see pump): a short command would otherwise allocate
// them anew, and the garbage collector would run for them. Sinks copy
// what they are given through Output.
var readBufs sync.Map // size -> *sync.Pool of *[]byte

func getReadBuf(size int) []byte {
	pool, _ := readBufs.LoadOrStore(size, &sync.Pool{New: func() any { b := make([]byte, size); return &b }})
	return *pool.(*sync.Pool).Get().(*[]byte)
}

func putReadBuf(b []byte) {
	if pool, ok := readBufs.Load(len(b)); ok {
		pool.(*sync.Pool).Put(&b)
	}
}

// launchShim starts a background process under a shim (survive.go): its
// stdout and stderr are the file the shim's directory keeps, which toold
// follows into the record.
func (m *Manager) launchShim(ctx context.Context, cs commandSpec, abs, rel string) (*process, error) {
	id := newID("proc-")
	dir, err := m.newShimDir(id)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInternal, err, "internal error; the details are in the toold log")
	}
	fail := func(err error) (*process, error) {
		m.removeShimDir(dir)
		return nil, err
	}
	out, err := os.OpenFile(filepath.Join(dir, shimLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(errdefs.Wrap(errdefs.ErrInternal, err, "internal error; the details are in the toold log"))
	}
	follow, err := os.Open(out.Name())
	if err != nil {
		out.Close()
		return fail(errdefs.Wrap(errdefs.ErrInternal, err, "internal error; the details are in the toold log"))
	}
	spec := sandbox.Spec{
		Path:     m.shell,
		Args:     []string{filepath.Base(m.shell), "-c", cs.command},
		Env:      m.commandEnv(cs.env),
		Dir:      abs,
		Grace:    m.cfg.KillGrace,
		Policy:   m.policyFor(),
		KeepTree: true,
		Shim:     &sandbox.ShimSpec{Dir: dir, Orphan: m.cfg.OrphanTimeout},
	}
	stdio := sandbox.Stdio{Stdout: out, Stderr: out}
	var inW *os.File
	if cs.stdin != nil {
		var inR *os.File
		if inR, inW, err = os.Pipe(); err != nil {
			out.Close()
			follow.Close()
			return fail(errdefs.Wrap(errdefs.ErrResourceExhausted, err, "cannot create a pipe: %v", err))
		}
		stdio.Stdin = inR
		defer inR.Close()
	}
	// The shim's tree is stopped by kill, its timeouts, the conversation's
	// end or toold's shutdown (unless it keeps processes) — never by a
	// context: it outlives this toold.
	h, err := m.startHelper(context.Background(), spec, stdio)
	out.Close()
	if err != nil {
		follow.Close()
		if inW != nil {
			inW.Close()
		}
		return fail(m.startError(ctx, err))
	}
	if inW != nil {
		go feedStdin(inW, cs.stdin)
	}
	now := time.Now()
	if err := writeMeta(dir, shimMetaData{
		Kind: "process", ID: id, Conv: cs.conv, Verifier: m.verifierOf(cs.conv), CallID: cs.callID, Command: cs.command,
		Dir: rel, PID: h.Pid(), Started: now, Timeout: cs.timeout, Idle: cs.idle, Home: m.dir,
	}); err != nil {
		m.cfg.Logger.Warn("terminal: a background process will not survive a restart of toold", "process_id", id, "err", err)
	}
	p := &process{
		m: m, id: id, conv: cs.conv, callID: cs.callID, command: cs.command, dir: rel,
		background: true, timeout: cs.timeout, idle: cs.idle, started: now,
		h: h, rec: m.store.create(cs.conv, cs.callID, cs.command), done: make(chan struct{}), shimDir: dir,
	}
	p.lastOutput.Store(now.UnixNano())
	m.mu.Lock()
	m.procs[p.id] = p
	m.mu.Unlock()
	go p.runShim(follow, func() {})
	m.cfg.Logger.Debug("command started under a shim", "process_id", p.id, "pid", h.Pid(), "conversation_id", cs.conv, "call_id", cs.callID)
	return p, nil
}
