package terminal

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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
//   - meta.json: what toold needs to adopt it (ids, conversation and its
//     secret, command, timeouts), written by toold once it runs;
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
	shimLog  = "out"
	shimMeta = "meta.json"
)

// shimMetaData is meta.json.
type shimMetaData struct {
	Kind    string    `json:"kind"` // "process" or "session"
	ID      string    `json:"id"`
	Conv    string    `json:"conversation"`
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

// secretOf returns the secret to keep with conv's processes.
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
			m.adopted[md.Conv] = md.Secret
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
	m.mu.Lock()
	m.procs[p.id] = p
	m.mu.Unlock()
	m.wg.Add(1)
	go p.runShim(f, func() {})
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
	m.mu.Lock()
	m.sessions[s.id] = s
	m.mu.Unlock()
	m.wg.Add(1)
	go s.run(func() {})
}

// Adopted returns the conversations of the processes and sessions adopted
// at start, with their secrets: the daemon registers them, so that their
// clients reach them again by presenting the secret they had.
func (m *Manager) Adopted() map[string]string {
	out := make(map[string]string, len(m.adopted))
	for k, v := range m.adopted {
		out[k] = v
	}
	return out
}

// journalPrefix starts the names of the files that record running
// foreground commands: "call-<process id>.json".
const journalPrefix = "call-"

// InterruptedCall is a foreground command that was running when the toold
// before this one died: its helper stopped it, and its call never ended.
type InterruptedCall struct {
	Conversation, CallID, Command string
	Started                       time.Time
}

// journalCall records that foreground command p runs, and returns the
// file's path ("" when it cannot).
func (m *Manager) journalCall(p *process) string {
	b, err := json.Marshal(InterruptedCall{Conversation: p.conv, CallID: p.callID, Command: p.command, Started: p.started})
	if err != nil {
		return ""
	}
	path := filepath.Join(m.procsDir, journalPrefix+p.id+".json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return ""
	}
	return path
}

// interruptedCall takes the record of a foreground command left by a
// toold that died.
func (m *Manager) interruptedCall(path string) {
	b, err := os.ReadFile(path)
	_ = os.Remove(path)
	var c InterruptedCall
	if err != nil || json.Unmarshal(b, &c) != nil {
		return
	}
	m.interrupted = append(m.interrupted, c)
}

// Interrupted returns the foreground commands that were running when the
// toold before this one died (they were stopped with it; their calls
// never ended): the daemon records their end in the history and the
// audit log as interrupted by a restart.
func (m *Manager) Interrupted() []InterruptedCall {
	return append([]InterruptedCall(nil), m.interrupted...)
}
