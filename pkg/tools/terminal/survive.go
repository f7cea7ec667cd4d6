package terminal

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/tools"
)

// What survives a restart (docs/terminal.md). With a state directory
// (Config.StateDir), background processes and sessions run under shims
// (sandbox.ShimSpec) that outlive toold. Each has a directory
// StateDir/procs/<id> holding:
//
//   - out: its output, written by the kernel (a background process's
//     stdout and stderr are this file, O_APPEND) or by the shim (what a
//     terminal writes), never through toold — nothing written while toold
//     is down is lost. toold follows the file (inotify) into the record or
//     ring clients read; byte offsets in it are the offsets clients see;
//   - meta.json: what toold needs to adopt it (ids, conversation and a
//     verifier of its secret — never the secret, see verifier.go —,
//     command, timeouts), written by toold once it runs;
//   - sock, while the shim runs; exit.json once its tree is gone.
//
// NewManager adopts every directory it finds: a running shim is connected
// to (it hands over a terminal's master), an ended one is listed with its
// exit status; both keep their ids. Directories go when toold forgets the
// process or session (killed and pruned, its conversation reaped, or an
// ordinary shutdown that stops everything).

// defaultOrphanTimeout is Config.OrphanTimeout's default.
const defaultOrphanTimeout = time.Hour

// Names in a shim's directory.
const (
	shimLog    = "out"
	shimMeta   = "meta.json"
	shimCursor = "cursor"
)

// shimMetaData is meta.json.
type shimMetaData struct {
	Kind string `json:"kind"` // "process" or "session"
	ID   string `json:"id"`
	Conv string `json:"conversation"`
	// Verifier checks the conversation's secret (verifier.go).
	Verifier string `json:"verifier,omitempty"`
	// Secret is the secret itself, as tolds before the verifier wrote
	// it: read (and replaced by a verifier at adoption), never written.
	Secret  string    `json:"secret,omitempty"`
	CallID  string    `json:"call_id,omitempty"`
	Command string    `json:"command,omitempty"`
	Dir     string    `json:"dir"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Home is the directory of the Manager that started it, which holds
	// its TMPDIR: kept while it runs.
	Home string `json:"home,omitempty"`
	// Background processes.
	Timeout time.Duration `json:"timeout,omitempty"`
	Idle    time.Duration `json:"idle,omitempty"`
	// Sessions.
	Name string   `json:"name,omitempty"`
	Argv []string `json:"argv,omitempty"`
	Rows int      `json:"rows,omitempty"`
	Cols int      `json:"cols,omitempty"`
}

// shims reports whether background processes and sessions run under
// shims.
func (m *Manager) shims() bool { return m.procsDir != "" }

// newShimDir makes the directory of a process or session about to start.
func (m *Manager) newShimDir(id string) (string, error) {
	dir := filepath.Join(m.procsDir, id)
	return dir, os.Mkdir(dir, 0o700)
}

// writeMeta writes dir/meta.json.
func writeMeta(dir string, md shimMetaData) error {
	b, err := json.Marshal(md)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, shimMeta+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, shimMeta))
}

// secretOf returns conv's secret now ("" when unknown).
func (m *Manager) secretOf(conv string) string {
	if m.cfg.ConversationSecret == nil {
		return ""
	}
	return m.cfg.ConversationSecret(conv)
}

// removeShimDir removes a shim's directory once its process or session is
// forgotten ("" does nothing).
func (m *Manager) removeShimDir(dir string) {
	if dir != "" && strings.HasPrefix(dir, m.procsDir+string(filepath.Separator)) {
		_ = os.RemoveAll(dir)
	}
}

// follow copies what is appended to f to fn, as it comes, until done is
// closed (the writer is gone) and everything written is copied; or until
// stop is closed. It reports whether it copied to the end.
func follow(f *os.File, done, stop <-chan struct{}, fn func([]byte)) bool {
	changed := make(chan struct{}, 1)
	if fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC); err == nil {
		if _, err := unix.InotifyAddWatch(fd, f.Name(), unix.IN_MODIFY); err == nil {
			ino := os.NewFile(uintptr(fd), "inotify")
			defer ino.Close()
			go func() {
				buf := make([]byte, 4096)
				for {
					if _, err := ino.Read(buf); err != nil {
						return
					}
					select {
					case changed <- struct{}{}:
					default:
					}
				}
			}()
		} else {
			unix.Close(fd)
		}
	}
	// A lost event (or no inotify) costs at most this much latency.
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	buf := make([]byte, 64<<10)
	ended := false
	for {
		n, err := f.Read(buf)
		if n > 0 {
			fn(buf[:n])
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return false
		}
		if ended {
			return true
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-done:
			// Once more to the end: the writer is gone.
			ended = true
		case <-stop:
			return false
		}
	}
}

// adopt takes over the processes and sessions a toold before this one
// left in the state directory.
func (m *Manager) adopt() {
	ents, err := os.ReadDir(m.procsDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), journalPrefix) {
			m.interruptedCall(filepath.Join(m.procsDir, e.Name()))
			continue
		}
		dir := filepath.Join(m.procsDir, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, shimMeta))
		var md shimMetaData
		if err != nil || json.Unmarshal(b, &md) != nil || md.ID != e.Name() {
			// toold died before it recorded the process: nobody can reach
			// it; its shim ends at its orphan timeout.
			if _, err := os.Stat(filepath.Join(dir, "sock")); err != nil {
				_ = os.RemoveAll(dir)
			}
			continue
		}
		h, master, err := sandbox.AdoptShim(dir, md.PID, m.cfg.KillGrace)
		if err != nil {
			h = nil
		}
		switch md.Kind {
		case "process":
			m.adoptProcess(dir, md, h)
		case "session":
			m.adoptSession(dir, md, h, master)
		default:
			if h != nil {
				h.Detach()
			}
			continue
		}
		if md.Secret != "" {
			// Written by an older toold: keep a verifier instead.
			md.Verifier, md.Secret = m.verifier(md.Secret), ""
			if err := writeMeta(dir, md); err != nil {
				m.cfg.Logger.Warn("terminal: replacing a secret by its verifier in meta.json failed", "dir", dir, "err", err)
			}
		}
		if m.adopted[md.Conv] == "" {
			// Registered again, so that it is reached with its secret or
			// reaped when idle.
			m.adopted[md.Conv] = md.Verifier
		}
		if md.Home != "" && h != nil {
			m.keepHomes[md.Home] = true
		}
		m.cfg.Logger.Info("terminal: adopted from the previous toold", "kind", md.Kind, "id", md.ID, "conversation_id", md.Conv, "running", h != nil)
	}
}

// ended returns a Process for a shim that is gone: its exit status as
// recorded, or lost.
func ended(dir string, pid int) *sandbox.Process {
	e, ok := sandbox.ReadShimExit(dir)
	if !ok {
		e = sandbox.Exit{Code: -1, Err: errors.New("its helper ended while no toold ran, without a report")}
	}
	return sandbox.EndedProcess(pid, e)
}

func (m *Manager) adoptProcess(dir string, md shimMetaData, h *sandbox.Process) {
	if h == nil {
		h = ended(dir, md.PID)
	}
	f, err := os.Open(filepath.Join(dir, shimLog))
	if err != nil {
		h.Detach()
		return
	}
	rec := m.store.create(md.Conv, md.CallID, md.Command)
	p := &process{
		m: m, id: md.ID, conv: md.Conv, callID: md.CallID, command: md.Command, dir: md.Dir,
		background: true, timeout: md.Timeout, idle: md.Idle, started: md.Started,
		h: h, rec: rec, done: make(chan struct{}), shimDir: dir,
	}
	p.lastOutput.Store(time.Now().UnixNano())
	if b, err := os.ReadFile(filepath.Join(dir, shimCursor)); err == nil {
		// Where the model's next get_output starts, as before the restart.
		p.cursor, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	m.mu.Lock()
	m.procs[p.id] = p
	m.mu.Unlock()
	m.wg.Add(1)
	go p.runShim(f, func() {})
}

// saveCursor keeps where the model's next get_output of a process under a
// shim starts, for the toold that adopts it.
func (p *process) saveCursor(next int64) {
	if p.shimDir != "" {
		_ = os.WriteFile(filepath.Join(p.shimDir, shimCursor), []byte(strconv.FormatInt(next, 10)), 0o600)
	}
}

// runShim is the goroutine of a process under a shim: it follows the
// output file into the record, enforces the timeouts, and finishes the
// record when the tree is gone; at a shutdown that keeps processes it
// lets go of the shim instead.
func (p *process) runShim(f *os.File, release func()) {
	defer p.m.wg.Done()
	defer f.Close()
	followed := make(chan bool, 1)
	go func() {
		followed <- follow(f, p.h.Done(), p.m.detach, func(b []byte) {
			p.lastOutput.Store(time.Now().UnixNano())
			p.rec.write(tools.Stdout, b)
		})
	}()
	if !p.watch(p.m.detach) {
		<-followed
		p.h.Detach()
		release()
		return
	}
	<-followed
	release()
	p.end()
}

func (m *Manager) adoptSession(dir string, md shimMetaData, h *sandbox.Process, master *os.File) {
	if h == nil || master == nil {
		if master != nil {
			master.Close()
		}
		if h != nil {
			// A session's shim always holds the master; without it the
			// session cannot take input.
			h.Stop()
		} else {
			h = ended(dir, md.PID)
		}
		master = nil
	}
	f, err := os.Open(filepath.Join(dir, shimLog))
	if err != nil {
		h.Detach()
		if master != nil {
			master.Close()
		}
		return
	}
	if master != nil {
		_ = unix.SetNonblock(int(master.Fd()), true)
	}
	s := &Session{
		m: m, id: md.ID, conv: md.Conv, name: md.Name, dir: md.Dir, argv: md.Argv, created: md.Started,
		master: master, h: h, done: make(chan struct{}), shimDir: dir, log: f,
		out: newRing(m.cfg.SessionBuffer), changed: make(chan struct{}), rows: md.Rows, cols: md.Cols,
	}
	if b, err := os.ReadFile(filepath.Join(dir, shimCursor)); err == nil {
		s.cursor, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	m.mu.Lock()
	m.sessions[s.id] = s
	m.mu.Unlock()
	m.wg.Add(1)
	go s.run(func() {})
}

// Adopted returns the conversations of the processes and sessions adopted
// at start, each with the verifier of its secret ("" when none was
// recorded): the daemon registers them, so that their clients reach them
// again by presenting the secret they had (VerifySecret checks it).
func (m *Manager) Adopted() map[string]string {
	out := make(map[string]string, len(m.adopted))
	for k, v := range m.adopted {
		out[k] = v
	}
	return out
}

// journalPrefix starts the names of the files that record running
// foreground commands: "call-journal-<random>.jsonl", one per Manager
// (callJournal). Files named "call-<process id>.json" (one command each)
// are read too: older toolds wrote those.
const journalPrefix = "call-"

// InterruptedCall is a foreground command that was running when the toold
// before this one died: its helper stopped it, and its call never ended.
type InterruptedCall struct {
	Conversation, CallID, Command string
	Started                       time.Time
}

// callJournal records the foreground commands that run, so that the next
// toold reports them as interrupted should this one die (their helpers
// stop them with it). It is one append-only file per Manager, a line when
// a command starts and one when it ends: a write(2) each, where a file per
// command cost a create and an unlink on the state directory's file system
// (the largest part of starting `true`, by profile). When no command runs
// and the file has grown past journalCompact, it is emptied.
type callJournal struct {
	mu      sync.Mutex
	dir     string
	f       *os.File // opened with the first command
	failed  bool     // the file could not be opened: nothing is recorded
	running int      // commands started and not ended
	size    int64
}

// journalCompact is the size past which an idle journal is emptied.
const journalCompact = 1 << 20

// journalLine is a line of the journal: a start (Op empty) or an end.
type journalLine struct {
	Op string `json:"op,omitempty"`
	ID string `json:"id,omitempty"`
	InterruptedCall
}

// start records that foreground command p runs; it reports whether it did
// (then end must follow).
func (j *callJournal) start(p *process) bool {
	b, err := json.Marshal(journalLine{ID: p.id, InterruptedCall: InterruptedCall{Conversation: p.conv, CallID: p.callID, Command: p.command, Started: p.started}})
	if err != nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil && !j.failed {
		j.f, err = os.OpenFile(filepath.Join(j.dir, journalPrefix+"journal-"+newID("")+".jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
		j.failed = err != nil
	}
	if j.f == nil || !j.write(append(b, '\n')) {
		return false
	}
	j.running++
	return true
}

// end records that a command start recorded has ended.
func (j *callJournal) end(id string) {
	b, _ := json.Marshal(journalLine{Op: "end", ID: id})
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return // closed: the Manager gave up waiting for its commands
	}
	j.running--
	if j.running == 0 && j.size > journalCompact && j.f.Truncate(0) == nil {
		j.size = 0 // O_APPEND: the next line is written at 0
		return
	}
	j.write(append(b, '\n'))
}

func (j *callJournal) write(line []byte) bool {
	n, err := j.f.Write(line)
	j.size += int64(n)
	return err == nil
}

// close removes the journal when no recorded command runs.
func (j *callJournal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return
	}
	_ = j.f.Close()
	if j.running == 0 {
		_ = os.Remove(j.f.Name())
	}
	j.f, j.failed = nil, true
}

// interruptedCall takes the records of foreground commands left by a
// toold that died: the commands a journal shows started and not ended.
func (m *Manager) interruptedCall(path string) {
	b, err := os.ReadFile(path)
	_ = os.Remove(path)
	if err != nil {
		return
	}
	var started []journalLine
	ended := map[string]bool{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var l journalLine
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &l) != nil {
			continue // a line cut short by the crash
		}
		if l.Op == "end" {
			ended[l.ID] = true
		} else {
			started = append(started, l)
		}
	}
	for _, l := range started {
		if l.ID == "" || !ended[l.ID] {
			m.interrupted = append(m.interrupted, l.InterruptedCall)
		}
	}
}

// Interrupted returns the foreground commands that were running when the
// toold before this one died (they were stopped with it; their calls
// never ended): the daemon records their end in the history and the
// audit log as interrupted by a restart.
func (m *Manager) Interrupted() []InterruptedCall {
	return append([]InterruptedCall(nil), m.interrupted...)
}
