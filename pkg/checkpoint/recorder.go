// Package checkpoint records what every call changes in the workspace, so
// that a client can see a call's changes and rewind the workspace to
// before any call of its conversation.
//
// The Recorder keeps a manifest of the workspace (every path's kind, mode,
// size, stat key and, for a file, the SHA-256 of its content) and a
// content store holding the bytes of every file the manifest names (one
// copy per distinct content, like git's object store of a checked-out
// tree; files over Config.MaxFileBytes are tracked but not kept). The
// "before" of any change is therefore in the store before the change
// happens, whatever wrote it: an editor's rename or a command's in-place
// write alike.
//
// What changed is found with inotify (watch.go), read at the boundaries of
// calls: a call that may change the workspace opens a window (Begin) and
// closes it when it ends (the function Begin returned); the changes queued
// in between are read, the manifest updated, the old and new contents
// stored, and the changes within the call's scope (the paths a file tool
// writes; everything for a command) become the call's record. Changes
// found outside every window — a person's editor, a background process or
// a terminal session working on after its call ended, another program —
// update the manifest and belong to no call: a rewind that meets them
// reports a conflict.
//
// Calls that overlap in one workspace share the window: a change made
// while two commands run is recorded by the first to end.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Recorder.
type Config struct {
	// Workspace is the workspace directory.
	Workspace string
	// StoreDir is where contents are kept (removed and created again by
	// New: records live as long as the Recorder).
	StoreDir string
	// MaxBytes bounds the store: when the contents it holds and the
	// records themselves (recordSize: about 200 bytes and the path for
	// each change, held in memory) come to more, the oldest records are
	// dropped, whatever their conversation, until they fit (default
	// 1 GiB). Counting the records bounds a store whose changes hold no new
	// contents (directories, renames, modes, contents already kept), which
	// MaxCalls bounds only per conversation. The current workspace's own
	// contents are never dropped: the bound should exceed the workspace's
	// size.
	MaxBytes int64
	// MaxFileBytes is the largest file whose content is kept (default
	// 16 MiB); a change to a larger file is recorded but cannot be
	// rewound.
	MaxFileBytes int64
	// MaxCalls is the most records one conversation keeps, the newest
	// (default 1000).
	MaxCalls int
	// Logger gets what goes wrong; nil discards it.
	Logger *slog.Logger
	// Secret, when set, reports whether a path of the workspace (absolute)
	// is a secret that commands cannot read (the sandbox masks it): its
	// content is kept, so that a rewind can put it back, but never served
	// (Content refuses it, so no diff shows it). A command that moves a
	// secret's directory must not learn the secret from its own call's
	// diff.
	Secret func(abs string) bool
}

func (c Config) withDefaults() Config {
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 30
	}
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = 16 << 20
	}
	if c.MaxCalls <= 0 {
		c.MaxCalls = 1000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Change is what one call did to one path: its state before the call and
// after it.
type Change struct {
	// Path is relative to the workspace, with slashes.
	Path          string
	Before, After State
}

// Call is the record of one call.
type Call struct {
	Conversation, CallID string
	// Seq orders the calls of a Recorder by their start.
	Seq            uint64
	Started, Ended time.Time
	// Changes are sorted by path.
	Changes []Change
	// Running says the call has not ended.
	Running bool
}

// Recorder records calls' changes. Its methods are safe for concurrent
// use.
type Recorder struct {
	cfg   Config
	root  *os.Root
	ready chan struct{} // closed when the first walk is done

	mu       sync.Mutex
	watch    *watcher
	blobs    *blobs
	manifest map[string]State
	tick     uint64            // counts drains
	pending  []pending         // changes not yet claimed
	open     []*window         // running calls
	calls    []*Call           // ended, oldest first
	meta     int64             // recordSize of calls, summed
	dropped  map[string]uint64 // conversation → the newest seq dropped
	seq      uint64
	closed   bool
	stop     atomic.Bool // Close ends the first walk early
	storeRel string      // the store, when it lies in the workspace
}

type pending struct {
	Change
	at uint64 // the drain that found it
}

type window struct {
	call  *Call
	begin uint64   // the drain at its start
	scope []string // nil: everything
}

// New starts recording the workspace: it walks it once in the background
// (a call's Begin waits for that walk) and stores its contents.
func New(cfg Config) (*Recorder, error) {
	cfg = cfg.withDefaults()
	root, err := os.OpenRoot(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	b, err := newBlobs(cfg.StoreDir)
	if err != nil {
		root.Close()
		return nil, err
	}
	r := &Recorder{cfg: cfg, root: root, ready: make(chan struct{}), watch: newWatcher(), blobs: b,
		manifest: map[string]State{}, dropped: map[string]uint64{}}
	if ws, err := filepath.EvalSymlinks(cfg.Workspace); err == nil {
		if st, err := filepath.EvalSymlinks(cfg.StoreDir); err == nil {
			if rel, err := filepath.Rel(ws, st); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				r.storeRel = filepath.ToSlash(rel)
			}
		}
	}
	go func() {
		defer close(r.ready)
		r.mu.Lock()
		defer r.mu.Unlock()
		start := time.Now()
		r.walkAll(nil)
		r.settle()
		r.cfg.Logger.Debug("checkpoints: workspace recorded", "paths", len(r.manifest), "bytes", r.blobs.bytes,
			"took", time.Since(start), "watching", !r.watch.full)
	}()
	return r, nil
}

// Ready waits for the first walk of the workspace.
func (r *Recorder) Ready(ctx context.Context) error {
	select {
	case <-r.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops recording and removes the store. A first walk still under
// way stops.
func (r *Recorder) Close() error {
	r.stop.Store(true)
	<-r.ready
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.watch.close()
	err := os.RemoveAll(r.cfg.StoreDir)
	return errors.Join(err, r.root.Close())
}

// Stats are figures of the store.
type Stats struct {
	Paths, Calls int
	Bytes        int64
	// Watching says changes are found by inotify; false means every
	// boundary walks the workspace.
	Watching bool
}

// Stats returns the store's figures.
func (r *Recorder) Stats() Stats {
	<-r.ready
	r.mu.Lock()
	defer r.mu.Unlock()
	return Stats{Paths: len(r.manifest), Calls: len(r.calls), Bytes: r.blobs.bytes, Watching: !r.watch.full}
}

// Begin opens the window of a call of conversation that may change the
// workspace. scope lists the paths (relative to the workspace, or
// absolute) whose changes the call claims, each with what is below it and
// the directories above it that it creates or removes;
// nil claims every change (a command). The returned function closes the
// window and records the call; it must be called once. When ctx ends
// before the first walk of the workspace is done, nothing is recorded.
func (r *Recorder) Begin(ctx context.Context, conversation, callID string, scope []string) (end func()) {
	if r.Ready(ctx) != nil {
		return func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return func() {}
	}
	r.sync()
	r.seq++
	w := &window{call: &Call{Conversation: conversation, CallID: callID, Seq: r.seq, Started: time.Now(), Running: true},
		begin: r.tick, scope: r.scopeOf(scope)}
	r.open = append(r.open, w)
	return func() { r.end(w) }
}

func (r *Recorder) scopeOf(given []string) []string {
	if given == nil {
		return nil
	}
	scope := []string{}
	for _, p := range given {
		if filepath.IsAbs(p) {
			rel, err := filepath.Rel(r.cfg.Workspace, p)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				continue // outside the workspace
			}
			p = rel
		}
		p = filepath.ToSlash(filepath.Clean(p))
		if p == "." {
			return nil
		}
		scope = append(scope, strings.TrimPrefix(p, "./"))
	}
	return scope
}

func (w *window) claims(p pending) bool {
	if p.at <= w.begin {
		return false
	}
	if w.scope == nil {
		return true
	}
	for _, s := range w.scope {
		if under(p.Path, s) {
			return true
		}
		// The directories a file tool makes for a file it writes (or
		// removes with it).
		if under(s, p.Path) && (p.Before.Kind == Absent || p.After.Kind == Absent) {
			return true
		}
	}
	return false
}

func (r *Recorder) end(w *window) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.sync()
	r.open = slices.DeleteFunc(r.open, func(o *window) bool { return o == w })
	c := w.call
	c.Ended, c.Running = time.Now(), false
	byPath := map[string]int{}
	r.pending = slices.DeleteFunc(r.pending, func(p pending) bool {
		if !w.claims(p) {
			return false
		}
		if i, ok := byPath[p.Path]; ok {
			// A later change of a path the call changed already: the
			// path's state before the call stays.
			r.blobs.unref(c.Changes[i].After)
			r.blobs.unref(p.Before)
			c.Changes[i].After = p.After
			return true
		}
		byPath[p.Path] = len(c.Changes)
		c.Changes = append(c.Changes, p.Change)
		return true
	})
	c.Changes = slices.DeleteFunc(c.Changes, func(ch Change) bool {
		if ch.Before.Same(ch.After) {
			r.blobs.unref(ch.Before)
			r.blobs.unref(ch.After)
			return true
		}
		return false
	})
	slices.SortFunc(c.Changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	r.settle()
	r.calls = append(r.calls, c)
	r.meta += recordSize(c)
	r.bound(c.Conversation)
}

// sync reads the queued changes into the manifest and pending.
func (r *Recorder) sync() {
	r.tick++
	dirty := map[string]bool{}
	if !r.watch.drain(dirty) {
		r.walkAll(nil)
	} else {
		paths := make([]string, 0, len(dirty))
		for p := range dirty {
			if !r.ignored(p) {
				paths = append(paths, p)
			}
		}
		slices.Sort(paths)
		for _, p := range paths {
			r.refresh(p)
		}
	}
	r.settle()
}

// settle forgets the pending changes no running call can claim: they were
// made outside every call.
func (r *Recorder) settle() {
	r.pending = slices.DeleteFunc(r.pending, func(p pending) bool {
		for _, w := range r.open {
			if w.claims(p) {
				return false
			}
		}
		r.blobs.unref(p.Before)
		r.blobs.unref(p.After)
		return true
	})
	r.blobs.sweep()
}

// note records a change of p from the manifest's state to s.
func (r *Recorder) note(p string, s State) {
	old := r.manifest[p]
	if old.Same(s) && old.Kind != File {
		r.manifest[p] = s
		return
	}
	r.blobs.ref(s)
	if s.Kind == Absent {
		delete(r.manifest, p)
	} else {
		r.manifest[p] = s
	}
	if old.Same(s) {
		// The same content under a new stat key.
		r.blobs.unref(old)
		return
	}
	// The manifest's reference to old and a new one to s move to the
	// change.
	r.blobs.ref(s)
	r.pending = append(r.pending, pending{Change: Change{Path: p, Before: old, After: s}, at: r.tick})
}

// refresh reads the state of p and what changed below it.
func (r *Recorder) refresh(p string) {
	old := r.manifest[p]
	s, err := r.stat(p, old)
	if err != nil {
		r.cfg.Logger.Warn("checkpoints: cannot read a changed path; its change is not recorded", "path", p, "err", err)
		return
	}
	if old.Kind == Dir && s.Kind != Dir {
		r.removeBelow(p)
	}
	r.note(p, s)
	if s.Kind == Dir && old.Kind != Dir {
		// A new directory (or one moved here): what is in it now, and a
		// watch for what comes.
		r.walk(p, func(rel string) { r.refresh1(rel) })
	}
}

// refresh1 is refresh for a path found by a walk.
func (r *Recorder) refresh1(p string) {
	old := r.manifest[p]
	s, err := r.stat(p, old)
	if err != nil {
		r.cfg.Logger.Warn("checkpoints: cannot read a path", "path", p, "err", err)
		return
	}
	r.note(p, s)
}

// removeBelow notes that everything below the directory p is gone.
func (r *Recorder) removeBelow(p string) {
	r.watch.forget(p)
	var gone []string
	for q := range r.manifest {
		if q != p && under(q, p) {
			gone = append(gone, q)
		}
	}
	slices.Sort(gone)
	for _, q := range gone {
		r.note(q, State{})
	}
}

// walkAll walks the whole workspace: a path found is refreshed, a path of
// the manifest not found is gone.
func (r *Recorder) walkAll(_ []string) {
	r.watch.forget("")
	seen := map[string]bool{}
	r.walk("", func(rel string) {
		seen[rel] = true
		r.refresh1(rel)
	})
	var gone []string
	for q := range r.manifest {
		if !seen[q] {
			gone = append(gone, q)
		}
	}
	for _, q := range gone {
		r.note(q, State{})
	}
}

// bound drops records beyond the bounds: the oldest of conv beyond
// MaxCalls, then the oldest of all while the store is over MaxBytes.
func (r *Recorder) bound(conv string) {
	n := 0
	for _, c := range r.calls {
		if c.Conversation == conv {
			n++
		}
	}
	for i := 0; n > r.cfg.MaxCalls && i < len(r.calls); {
		if r.calls[i].Conversation == conv {
			r.drop(i)
			n--
			continue
		}
		i++
	}
	for r.blobs.bytes+r.meta > r.cfg.MaxBytes && len(r.calls) > 0 {
		r.drop(0)
		r.blobs.sweep()
	}
}

func (r *Recorder) drop(i int) {
	c := r.calls[i]
	for _, ch := range c.Changes {
		r.blobs.unref(ch.Before)
		r.blobs.unref(ch.After)
	}
	if c.Seq > r.dropped[c.Conversation] {
		r.dropped[c.Conversation] = c.Seq
	}
	r.meta -= recordSize(c)
	r.calls = slices.Delete(r.calls, i, i+1)
}

// What a record holds in memory besides its strings, about: the Call, and
// a Change with its two States.
const (
	callOverhead   = 128
	changeOverhead = 160
)

// recordSize is what a record counts against Config.MaxBytes.
func recordSize(c *Call) int64 {
	n := int64(callOverhead + len(c.Conversation) + len(c.CallID))
	for _, ch := range c.Changes {
		n += int64(changeOverhead + len(ch.Path) + len(ch.Before.Hash) + len(ch.Before.Target) + len(ch.After.Hash) + len(ch.After.Target))
	}
	return n
}

// Calls returns the records of conversation's calls, oldest first: every
// call when callID is empty, else that call's (the latest with that id).
// ErrNotFound when there is none; ErrDropped when the store's bounds
// dropped it.
func (r *Recorder) Calls(ctx context.Context, conversation, callID string) ([]Call, error) {
	if err := r.Ready(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Call
	for _, c := range r.calls {
		if c.Conversation == conversation && (callID == "" || c.CallID == callID) {
			out = append(out, *c)
		}
	}
	if callID != "" && len(out) > 1 {
		out = out[len(out)-1:]
	}
	if callID != "" && len(out) == 0 {
		for _, w := range r.open {
			if w.call.Conversation == conversation && w.call.CallID == callID {
				return []Call{{Conversation: conversation, CallID: callID, Seq: w.call.Seq, Started: w.call.Started, Running: true}}, nil
			}
		}
		if r.dropped[conversation] > 0 {
			return nil, fmt.Errorf("%w: no record of call %q of conversation %q: the oldest records of the conversation were dropped to keep within the checkpoint store's bounds", ErrDropped, callID, conversation)
		}
		return nil, fmt.Errorf("%w: no record of call %q in conversation %q (calls that cannot change the workspace are not recorded)", ErrNotFound, callID, conversation)
	}
	return out, nil
}

// Content returns the content of a file state, for diffs.
func (r *Recorder) Content(s State) ([]byte, error) {
	if s.Kind != File || s.Hash == "" {
		return nil, fmt.Errorf("%w: the content was not kept", ErrNotFound)
	}
	if s.Secret {
		return nil, fmt.Errorf("%w: the content of a secret is not served", ErrSecret)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blobs.get(s.Hash)
}

// Errors of the Recorder.
var (
	ErrNotFound = errors.New("not found")
	ErrDropped  = errors.New("dropped")
	ErrRunning  = errors.New("calls are running")
	// ErrSecret: the content asked for is a secret's (Config.Secret).
	ErrSecret = errors.New("secret")
)
