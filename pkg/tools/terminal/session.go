package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/syntax"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/sandbox"
)

// Session defaults and bounds.
const (
	defaultSessionName = "main"
	defaultRows        = 24
	defaultCols        = 80
	// inputTimeout bounds a write to a terminal whose program reads no input.
	inputTimeout = 5 * time.Second
	// maxExitedSessions bounds the exited sessions a conversation keeps
	// readable.
	maxExitedSessions = 8
)

// SessionOptions says what session to open.
type SessionOptions struct {
	// Name distinguishes a conversation's sessions (default "main").
	Name string
	// WorkingDir is the directory the shell starts in, relative to the
	// workspace (default its root).
	WorkingDir string
	// Shell is the program to run (a name on PATH or a path); default the
	// Manager's shell.
	Shell string
	// Rows and Cols are the terminal size (default 24x80).
	Rows, Cols int
}

// SessionInfo describes a session.
type SessionInfo struct {
	ID, ConversationID, Name string
	// Dir is the working directory the shell started in, relative to the
	// workspace.
	Dir string
	// Command is the program and its arguments.
	Command []string
	PID     int
	Rows    int
	Cols    int
	Created time.Time
	// State is "running" or "exited".
	State string
	// Outcome says how it ended, once it has.
	Outcome  string
	ExitCode int
	// FirstIndex is the index of the oldest output byte kept; NextIndex
	// the index the next output byte will have.
	FirstIndex, NextIndex int64
	// Attached counts the clients attached through TerminalService.
	Attached int
}

// Session is a persistent terminal: a shell on a pseudo-terminal, under a
// helper that supervises (and optionally confines) its process tree. Its
// output goes into a bounded ring addressed by absolute byte index (see
// ring); readers never block the shell. Its methods are safe for
// concurrent use.
type Session struct {
	m       *Manager
	id      string
	conv    string
	name    string
	dir     string // relative to the workspace
	argv    []string
	created time.Time
	master  *os.File // nil for an adopted session whose shim is gone
	h       *sandbox.Process
	done    chan struct{} // closed once the tree is gone and the output drained
	// Under a shim (survive.go): its directory, and the file of the
	// terminal's output the shim writes, which run follows.
	shimDir string
	log     *os.File
	writeMu sync.Mutex
	// typed is the text typed on the current line and not yet submitted
	// (guarded by writeMu): a line is judged when it is submitted, however
	// many writes built it.
	typed typedLine

	mu       sync.Mutex
	out      *ring
	changed  chan struct{} // closed and replaced when output arrives or the session ends
	lastOut  time.Time
	rows     int
	cols     int
	exit     sandbox.Exit
	exited   bool
	cursor   int64 // where the model's next get_output starts
	attached int
}

// OpenSession returns conv's session named opts.Name, starting it when
// there is none. An existing running session is reused when its working
// directory (and shell, if given) match; otherwise it is closed and a new
// one started in its place (as when the working directory changed).
// reused says which happened; replaced describes a session that was
// closed to make room.
func (m *Manager) OpenSession(ctx context.Context, conv string, opts SessionOptions) (s *Session, reused bool, replaced *SessionInfo, err error) {
	if opts.Name == "" {
		opts.Name = defaultSessionName
	}
	if opts.Rows <= 0 {
		opts.Rows = defaultRows
	}
	if opts.Cols <= 0 {
		opts.Cols = defaultCols
	}
	abs, rel, err := m.resolveDir(opts.WorkingDir)
	if err != nil {
		return nil, false, nil, err
	}
	argv, path, err := m.sessionCommand(opts.Shell)
	if err != nil {
		return nil, false, nil, err
	}
	m.mu.Lock()
	if err := m.enterLocked(); err != nil {
		m.mu.Unlock()
		return nil, false, nil, err
	}
	var old *Session
	running, all := 0, 0
	for _, o := range m.sessions {
		if o.conv == conv && o.name == opts.Name {
			old = o
		}
		if !o.isExited() {
			all++
			if o.conv == conv && o != old {
				running++
			}
		}
	}
	if old != nil && !old.isExited() && old.dir == rel && (opts.Shell == "" || old.argv[0] == argv[0]) {
		m.mu.Unlock()
		if opts.Rows != defaultRows || opts.Cols != defaultCols {
			_ = old.Resize(opts.Rows, opts.Cols)
		}
		return old, true, nil, nil
	}
	if running >= m.cfg.MaxSessions || all >= 16*m.cfg.MaxSessions {
		m.mu.Unlock()
		return nil, false, nil, errdefs.New(errdefs.ErrResourceExhausted,
			"too many terminal sessions are open (limit %d per conversation); close_session one you no longer need", m.cfg.MaxSessions)
	}
	m.wg.Add(1) // the new session's goroutine
	m.mu.Unlock()
	if old != nil {
		info := old.Info()
		replaced = &info
		if err := old.Close(ctx); err != nil {
			m.wg.Done()
			return nil, false, nil, err
		}
	}
	s, err = m.startSession(conv, opts, argv, path, abs, rel)
	if err != nil {
		m.wg.Done()
		return nil, false, nil, err
	}
	m.pruneSessions(conv)
	return s, false, replaced, nil
}

// sessionCommand resolves a session's program and its arguments: the
// configured SessionArgs for the default shell; otherwise an interactive
// login shell for bash and zsh (-il), an interactive shell for other shells
// (-i), and no arguments for anything else.
func (m *Manager) sessionCommand(shell string) (argv []string, path string, err error) {
	path = m.shell
	if shell != "" {
		if path, err = exec.LookPath(shell); err != nil {
			return nil, "", errdefs.Failed("shell %q was not found; use a program on PATH such as bash or sh, or a full path", shell)
		}
	}
	name := filepath.Base(path)
	if shell == "" && m.cfg.SessionArgs != nil {
		return append([]string{name}, m.cfg.SessionArgs...), path, nil
	}
	switch name {
	case "bash", "zsh":
		argv = []string{name, "-il"}
	case "sh", "dash", "ksh", "mksh", "fish", "ash":
		argv = []string{name, "-i"}
	default:
		argv = []string{name}
	}
	return argv, path, nil
}

func (m *Manager) startSession(conv string, opts SessionOptions, argv []string, path, abs, rel string) (*Session, error) {
	master, tty, err := openPTY()
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrResourceExhausted, err, "cannot open a pseudo-terminal: %v", err)
	}
	if err := setSize(master, opts.Rows, opts.Cols); err != nil {
		master.Close()
		tty.Close()
		return nil, errdefs.Wrap(errdefs.ErrInternal, err, "internal error; the details are in the toold log")
	}
	id := newID("sess-")
	spec := sandbox.Spec{
		Path:     path,
		Args:     argv,
		Env:      environ(m.env, map[string]string{"TERM": "xterm-256color"}),
		Dir:      abs,
		Terminal: true,
		Grace:    m.cfg.KillGrace,
		Policy:   m.policyFor(),
	}
	stdio := sandbox.Stdio{Stdin: tty, Stdout: tty, Stderr: tty, Terminal: true}
	pctx, cancel := context.WithCancel(m.ctx)
	var shimDir string
	var log *os.File
	if m.shims() {
		// Under a shim the session outlives toold: the shim holds the
		// master and writes the output to a file toold follows; it is
		// stopped by close_session, the conversation's end or toold's
		// shutdown (unless it keeps sessions), never by a context.
		cancel()
		pctx, cancel = context.WithCancel(context.Background())
		if shimDir, err = m.newShimDir(id); err == nil {
			logPath := filepath.Join(shimDir, shimLog)
			if err = os.WriteFile(logPath, nil, 0o600); err == nil {
				log, err = os.Open(logPath)
			}
		}
		if err != nil {
			cancel()
			master.Close()
			tty.Close()
			m.removeShimDir(shimDir)
			return nil, errdefs.Wrap(errdefs.ErrInternal, err, "internal error; the details are in the toold log")
		}
		spec.Shim = &sandbox.ShimSpec{Dir: shimDir, Log: filepath.Join(shimDir, shimLog), Orphan: m.cfg.OrphanTimeout}
		stdio.Master = master
	}
	h, err := m.startHelper(pctx, spec, stdio)
	tty.Close()
	if err != nil {
		cancel()
		master.Close()
		if log != nil {
			log.Close()
			m.removeShimDir(shimDir)
		}
		return nil, m.startError(context.Background(), err)
	}
	s := &Session{
		m: m, id: id, conv: conv, name: opts.Name, dir: rel, argv: argv, created: time.Now(),
		master: master, h: h, done: make(chan struct{}), shimDir: shimDir, log: log,
		out: newRing(m.cfg.SessionBuffer), changed: make(chan struct{}), rows: opts.Rows, cols: opts.Cols,
	}
	if shimDir != "" {
		if err := writeMeta(shimDir, shimMetaData{
			Kind: "session", ID: id, Conv: conv, Verifier: m.verifierOf(conv), Dir: rel, PID: h.Pid(), Started: s.created,
			Name: opts.Name, Argv: argv, Rows: opts.Rows, Cols: opts.Cols, Home: m.dir,
		}); err != nil {
			m.cfg.Logger.Warn("terminal: a session will not survive a restart of toold", "session_id", id, "err", err)
		}
	}
	m.mu.Lock()
	m.sessions[s.id] = s
	m.mu.Unlock()
	go s.run(cancel)
	m.cfg.Logger.Debug("session started", "session_id", s.id, "pid", h.Pid(), "conversation_id", conv)
	return s, nil
}

// openPTY opens a pseudo-terminal. The master is returned in non-blocking
// mode, so that reads wait in the poller and a Close interrupts them
// (creack/pty leaves it blocking, having used its descriptor directly).
func openPTY() (master, tty *os.File, err error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	fd, err := unix.Dup(int(ptmx.Fd()))
	ptmx.Close()
	if err == nil {
		unix.CloseOnExec(fd)
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		tty.Close()
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), tty, nil
}

// setSize sets a terminal's window size (TIOCSWINSZ); the kernel sends
// SIGWINCH to its foreground process group.
func setSize(f *os.File, rows, cols int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	err = rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	})
	return errors.Join(err, ierr)
}

// run is the session's goroutine: it reads the terminal into the ring
// until the shell's tree is gone.
func (s *Session) run(release func()) {
	defer s.m.wg.Done()
	got := func(b []byte) {
		s.mu.Lock()
		s.out.write(b)
		s.lastOut = time.Now()
		s.notifyLocked()
		s.mu.Unlock()
	}
	if s.log != nil {
		// Under a shim: the shim reads the terminal into the log.
		defer s.log.Close()
		if !follow(s.log, s.h.Done(), s.m.detach, got) {
			select {
			case <-s.m.detach:
				// toold shuts down and keeps the session for the next.
				s.h.Detach()
				if s.master != nil {
					s.master.Close()
				}
				release()
				return
			default:
			}
			<-s.h.Done()
		}
	} else {
		readerDone := make(chan struct{})
		go func() {
			defer close(readerDone)
			buf := make([]byte, 32<<10)
			for {
				n, err := s.master.Read(buf)
				if n > 0 {
					got(buf[:n])
				}
				if err != nil { // EIO once no process holds the terminal
					return
				}
			}
		}()
		<-s.h.Done()
		select {
		case <-readerDone:
		case <-time.After(2 * time.Second):
			// Something outside the tree holds the terminal; stop reading.
			s.master.Close()
			<-readerDone
		}
	}
	if s.master != nil {
		s.master.Close()
	}
	release()
	s.mu.Lock()
	s.exit, s.exited = s.h.Exit(), true
	s.notifyLocked()
	s.mu.Unlock()
	close(s.done)
	s.m.cfg.Logger.Debug("session ended", "session_id", s.id, "exit", s.exit.String())
}

func (s *Session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Session) isExited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// pruneSessions drops the oldest exited sessions of conv beyond
// maxExitedSessions.
func (m *Manager) pruneSessions(conv string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var exited []*Session
	for _, s := range m.sessions {
		if s.conv == conv && s.isExited() {
			exited = append(exited, s)
		}
	}
	if len(exited) <= maxExitedSessions {
		return
	}
	slices.SortFunc(exited, func(a, b *Session) int { return a.created.Compare(b.created) })
	for _, s := range exited[:len(exited)-maxExitedSessions] {
		delete(m.sessions, s.id)
		m.removeShimDir(s.shimDir)
	}
}

// session returns conv's session id.
func (m *Manager) session(conv, id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok || s.conv != conv {
		return nil, errdefs.Failed("no terminal session %q in this conversation; create_session starts one", id)
	}
	return s, nil
}

// SessionByID returns any session by id, whatever its conversation. It is
// for TerminalService, whose clients hold the daemon's token; tools reach
// only their own conversation's sessions.
func (m *Manager) SessionByID(id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, errdefs.Failed("no terminal session %q", id)
	}
	return s, nil
}

// Sessions describes the sessions of conversation conv, or of every
// conversation when conv is empty, oldest first.
func (m *Manager) Sessions(conv string) []SessionInfo {
	m.mu.Lock()
	var ss []*Session
	for _, s := range m.sessions {
		if conv == "" || s.conv == conv {
			ss = append(ss, s)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(ss, func(a, b *Session) int { return a.created.Compare(b.created) })
	out := make([]SessionInfo, 0, len(ss))
	for _, s := range ss {
		out = append(out, s.Info())
	}
	return out
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Info describes the session.
func (s *Session) Info() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := SessionInfo{
		ID: s.id, ConversationID: s.conv, Name: s.name, Dir: s.dir, Command: slices.Clone(s.argv),
		PID: s.h.Pid(), Rows: s.rows, Cols: s.cols, Created: s.created, State: "running",
		FirstIndex: s.out.start(), NextIndex: s.out.end, Attached: s.attached,
	}
	if s.exited {
		in.State, in.Outcome, in.ExitCode = "exited", s.exit.String(), s.exit.Code
	}
	return in
}

// Done is closed when the session's shell and everything it started are
// gone and its output is read.
func (s *Session) Done() <-chan struct{} { return s.done }

// Write types p into the terminal. It fails when the session has exited
// or the program in it has not taken input for a few seconds.
func (s *Session) Write(p []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.writeLocked(p)
}

// Typed returns the text typed on the terminal's current line and not yet
// submitted, and whether it could be followed (false after keys whose
// effect on the line cannot be known, such as cursor movement or tab).
func (s *Session) Typed() (string, bool) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.typed.text, !s.typed.unknown
}

// TypeJudged writes p when the typed but unsubmitted text is still what
// policy judged p with (text, known, from Typed); else it writes nothing and
// fails, so the caller judges the input again.
func (s *Session) TypeJudged(text string, known bool, p []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.typed.text != text || s.typed.unknown == known {
		return errdefs.Failed("the text typed into terminal session %s changed after this input was judged (another input arrived first); send it again", s.id)
	}
	return s.writeLocked(p)
}

func (s *Session) writeLocked(p []byte) error {
	if s.isExited() || s.master == nil {
		return errdefs.Failed("terminal session %s has exited (%s); create_session starts a new one", s.id, s.Info().Outcome)
	}
	_ = s.master.SetWriteDeadline(time.Now().Add(inputTimeout))
	_, err := s.master.Write(p)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return errdefs.Wrap(errdefs.ErrFailed, err, "the terminal did not take the input within %s: the program in it is not reading; send \\u0003 (Ctrl-C) to interrupt it", inputTimeout)
		}
		return errdefs.Wrap(errdefs.ErrFailed, err, "writing to terminal session %s: %v", s.id, err)
	}
	s.typed.feed(p)
	return nil
}

// incomplete reports whether bash would keep reading after text: it does
// not parse as a complete command yet.
func incomplete(text string) bool {
	// A backslash before the newline continues the line.
	body := strings.TrimSuffix(text, "\n")
	n := len(body) - len(strings.TrimRight(body, "\\"))
	if n%2 == 1 {
		return true
	}
	_, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
	return err != nil && syntax.IsIncomplete(err)
}

// maxTyped bounds the unsubmitted text followed; beyond it, the line is
// unknown.
const maxTyped = 64 << 10

// typedLine follows the text typed on a terminal's current line.
type typedLine struct {
	text    string
	unknown bool
}

// feed follows p: Enter submits the line unless what was typed is not a
// complete command yet (a trailing backslash, an open quote or here-document,
// a loop without its end), which bash keeps reading; ^C and ^U discard it;
// other control keys (tab completion, cursor and history keys, escape
// sequences) edit it in ways that cannot be followed.
func (t *typedLine) feed(p []byte) {
	var b strings.Builder
	b.WriteString(t.text)
	for _, c := range p {
		switch {
		case c == '\r' || c == '\n':
			b.WriteByte('\n')
			if !incomplete(b.String()) {
				b.Reset()
				t.unknown = false
			}
		case c == 0x03 || c == 0x15:
			b.Reset()
			t.unknown = false
		case c < 0x20 || c == 0x7f:
			t.unknown = true
		default:
			b.WriteByte(c)
		}
	}
	t.text = b.String()
	if len(t.text) > maxTyped {
		t.text, t.unknown = "", true
	}
}

// Resize sets the terminal's size; programs in it get SIGWINCH.
func (s *Session) Resize(rows, cols int) error {
	if rows <= 0 || cols <= 0 || rows > 0xffff || cols > 0xffff {
		return errdefs.Invalid("/rows", "minimum", "rows and cols must be positive, got %dx%d", rows, cols)
	}
	if s.isExited() || s.master == nil {
		return errdefs.Failed("terminal session %s has exited", s.id)
	}
	if err := setSize(s.master, rows, cols); err != nil {
		return errdefs.Wrap(errdefs.ErrFailed, err, "resizing terminal session %s: %v", s.id, err)
	}
	s.mu.Lock()
	s.rows, s.cols = rows, cols
	s.mu.Unlock()
	return nil
}

// Close stops the session's tree (SIGHUP and SIGTERM, SIGKILL after the
// kill grace), waits until it is gone or ctx ends, and forgets the
// session.
func (s *Session) Close(ctx context.Context) error {
	s.h.Stop()
	select {
	case <-s.done:
	case <-ctx.Done():
		return errdefs.Wrap(errdefs.ErrTimeout, context.Cause(ctx), "terminal session %s is still stopping", s.id)
	}
	s.m.mu.Lock()
	delete(s.m.sessions, s.id)
	s.m.removeShimDir(s.shimDir)
	s.m.mu.Unlock()
	return nil
}

// Attach counts a client attached through TerminalService until the
// returned function is called.
func (s *Session) Attach() (detach func()) {
	s.mu.Lock()
	s.attached++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.attached--
			s.mu.Unlock()
		})
	}
}

// ReadFrom returns output from index from on, at most limit bytes, waiting
// until there is some. start is the index of data[0]: greater than from
// when the bytes at from were dropped from the ring. It returns io.EOF
// once the session has exited and everything was read, and ctx's error
// when ctx ends first.
func (s *Session) ReadFrom(ctx context.Context, from int64, limit int) (data []byte, start, next int64, err error) {
	for {
		s.mu.Lock()
		start = max(from, s.out.start())
		if start < s.out.end {
			data = s.out.read(start, limit)
			s.mu.Unlock()
			return data, start, start + int64(len(data)), nil
		}
		if s.exited {
			end := s.out.end
			s.mu.Unlock()
			return nil, end, end, io.EOF
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, from, from, context.Cause(ctx)
		}
	}
}

// sessionRead is what a model's read of a session returns.
type sessionRead struct {
	data        []byte
	from, next  int64 // index of data[0], index after it
	dropped     int64 // bytes between the requested index and from that fell out of the ring
	behind      int64 // bytes after next not returned (over the limit)
	exited      bool
	outcome     string
	first, last int64 // the ring's range
}

// read returns output from index from (the model's cursor when from < 0),
// at most limit bytes. With wait > 0 it first waits up to wait for output
// to arrive and then to settle (no new bytes for settle, or promptSettle
// when the output ends with what looks like a shell's prompt: the shell
// waits for input), so that a command typed just before has time to
// answer. It advances the cursor.
func (s *Session) read(ctx context.Context, from int64, limit int, wait time.Duration) sessionRead {
	const settle = 150 * time.Millisecond
	s.mu.Lock()
	if from < 0 {
		from = s.cursor
	}
	s.mu.Unlock()
	if wait > 0 {
		deadline := time.Now().Add(wait)
		for {
			s.mu.Lock()
			have, exited, quiet := s.out.end > from, s.exited, time.Since(s.lastOut)
			need := settle
			if have && endsWithPrompt(s.out.read(max(from, s.out.end-promptTail), promptTail)) {
				need = promptSettle
			}
			ch := s.changed
			s.mu.Unlock()
			left := time.Until(deadline)
			if exited || left <= 0 || (have && quiet >= need) {
				break
			}
			d := left
			if have {
				d = min(d, need-quiet)
			}
			t := time.NewTimer(d)
			select {
			case <-ch:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			if ctx.Err() != nil {
				break
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := sessionRead{first: s.out.start(), last: s.out.end, exited: s.exited}
	if s.exited {
		r.outcome = s.exit.String()
	}
	r.from = max(from, r.first)
	r.dropped = r.from - from
	if r.from > s.out.end {
		r.from = s.out.end
	}
	r.data = s.out.read(r.from, limit)
	if n := trimPartialRune(r.data); n > 0 && r.from+int64(len(r.data)) == s.out.end && !s.exited {
		r.data = r.data[:len(r.data)-n] // the rest of the character comes next time
	}
	r.next = r.from + int64(len(r.data))
	r.behind = s.out.end - r.next
	if s.cursor != r.next && s.shimDir != "" {
		// For the toold that adopts the session (survive.go).
		_ = os.WriteFile(filepath.Join(s.shimDir, shimCursor), []byte(strconv.FormatInt(r.next, 10)), 0o600)
	}
	s.cursor = r.next
	return r
}

// history returns the last limit bytes the session kept.
func (s *Session) history(limit int) sessionRead {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := sessionRead{first: s.out.start(), last: s.out.end, exited: s.exited}
	if s.exited {
		r.outcome = s.exit.String()
	}
	r.from = max(r.first, r.last-int64(limit))
	r.data = s.out.read(r.from, limit)
	r.next = r.from + int64(len(r.data))
	return r
}

// Cwd returns the directory the session's shell is in now (it may have
// cd'd since it started), as the kernel names it; ok is false when it
// cannot be read (the shell exited, or no /proc).
func (s *Session) Cwd() (string, bool) {
	if s.h == nil || s.isExited() {
		return "", false
	}
	d, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", s.h.Pid()))
	if err != nil || !filepath.IsAbs(d) || strings.HasSuffix(d, " (deleted)") {
		return "", false
	}
	return d, true
}

// Foreground reports which program reads what is typed into the terminal:
// the shell (shell true) or another program in the foreground (a REPL, an
// editor), whose name is returned. ok is false when it cannot be told.
func (s *Session) Foreground() (name string, shell, ok bool) {
	if s.h == nil || s.master == nil || s.isExited() {
		return "", false, false
	}
	rc, err := s.master.SyscallConn()
	if err != nil {
		return "", false, false
	}
	pgrp, cerr := 0, error(nil)
	if err := rc.Control(func(fd uintptr) { pgrp, cerr = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP) }); err != nil || cerr != nil || pgrp <= 0 {
		return "", false, false
	}
	if pgrp == s.h.Pid() {
		return "", true, true
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pgrp))
	if err != nil {
		return "", false, false
	}
	return strings.TrimSpace(string(comm)), false, true
}

func (s *Session) String() string { return fmt.Sprintf("session %s (%s)", s.id, s.dir) }

// promptSettle is how long output that ends like a prompt must stay quiet
// before a waiting read returns it (Session.read); promptTail is how much
// of its end is looked at.
const (
	promptSettle = 20 * time.Millisecond
	promptTail   = 64
)

// trailingEscapes are the control sequences a shell may write after its
// prompt (colors, bracketed paste, cursor moves, window titles).
var trailingEscapes = regexp.MustCompile(`(\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\))+$`)

// endsWithPrompt reports whether b ends like an interactive prompt — "$ ",
// "# ", "% " or "> " (sh, bash, zsh, a REPL, a continuation line), control
// sequences after it aside.
func endsWithPrompt(b []byte) bool {
	b = trailingEscapes.ReplaceAll(b, nil)
	n := len(b)
	if n < 2 || b[n-1] != ' ' {
		return false
	}
	switch b[n-2] {
	case '$', '#', '%', '>':
		return true
	}
	return false
}
