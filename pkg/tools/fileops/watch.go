package fileops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"github.com/toold/toold/pkg/workspace"
)

// ChangeKind is what happened to a path.
type ChangeKind int

// Kinds of change. A rename is the old path removed and the new one
// created.
const (
	Created ChangeKind = iota + 1
	Changed
	Removed
)

func (k ChangeKind) String() string {
	switch k {
	case Created:
		return "created"
	case Changed:
		return "changed"
	case Removed:
		return "removed"
	}
	return "unknown"
}

// Change is one path's change in a window.
type Change struct {
	// Path is workspace-relative, slash-separated.
	Path string
	Kind ChangeKind
	Dir  bool
}

// WatchEvent is what a watch reports: first the start (Started set),
// then batches of changes, each the changes of one coalescing window,
// with a Notice when something was not reported.
type WatchEvent struct {
	// Started: the watch is in place; Path is the directory watched
	// (workspace-relative), Dirs how many directories are watched.
	Started bool
	Path    string
	Dirs    int
	// Changes are merged per path within the window, in the order their
	// paths first changed.
	Changes []Change
	// Notice says what was not reported: directories beyond the cap, the
	// kernel's queue overflowing, changes beyond the pending bound. A
	// client that must be exact lists the directory again then.
	Notice string
}

// WatchOptions bound a watch.
type WatchOptions struct {
	// Recursive watches the directories below path too, and those created
	// later (not the ones .gitignore ignores, never .git).
	Recursive bool
	// Window coalesces changes: what happens to a path within it is one
	// change (default 100ms; at most 10s).
	Window time.Duration
	// MaxDirs caps the directories watched (default 4096, at most 65536);
	// directories beyond it are not watched, and a Notice says so.
	MaxDirs int
	// MaxPending caps the paths one window holds (default 10000); changes
	// of more paths are dropped, and a Notice says so.
	MaxPending int
}

func (o WatchOptions) withDefaults() WatchOptions {
	if o.Window <= 0 {
		o.Window = 100 * time.Millisecond
	}
	o.Window = min(o.Window, 10*time.Second)
	if o.MaxDirs <= 0 {
		o.MaxDirs = 4096
	}
	o.MaxDirs = min(o.MaxDirs, 65536)
	if o.MaxPending <= 0 {
		o.MaxPending = 10000
	}
	return o
}

// inotify events a watch asks for. IN_ONLYDIR: a watch is only ever on a
// directory; IN_EXCL_UNLINK: no events for files already unlinked.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// Watch reports the changes of the files under rel (a workspace-relative
// directory, as Resolve gives it in Location.Rel) to send, until ctx ends
// (then it returns nil) or send fails (its error). The caller has decided
// that the client may read rel.
//
// It uses inotify through golang.org/x/sys/unix rather than a watcher
// library: each directory is opened through the workspace's os.Root
// (which refuses to leave the workspace, whatever symlinks a command
// swaps in meanwhile) and the watch is added on that open directory
// (/proc/self/fd/N), so a watch is never placed outside the workspace;
// fsnotify adds watches by path name, which follows a symlink swapped into
// an intermediate component.
//
// send is called from one goroutine; while it blocks, changes keep being
// merged (up to WatchOptions.MaxPending paths).
func Watch(ctx context.Context, ws *workspace.Workspace, rel string, opt WatchOptions, send func(WatchEvent) error) error {
	opt = opt.withDefaults()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return errdefs.Wrap(errdefs.ErrResourceExhausted, err, "cannot watch: inotify: %v", err)
	}
	w := &watcher{ws: ws, root: rel, opt: opt, f: os.NewFile(uintptr(fd), "inotify"), fd: fd,
		wds: map[int]string{}, dirs: map[string]int{}, ignores: map[string]*scan.IgnoreList{},
		pending: map[string]*pendingChange{}, wake: make(chan struct{}, 1)}
	defer w.f.Close()
	if err := w.add(rel, nil); err != nil {
		return err
	}
	start := WatchEvent{Started: true, Path: rel, Dirs: len(w.dirs), Notice: w.takeNotice()}
	if err := send(start); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	readErr := make(chan error, 1)
	go func() { readErr <- w.read(ctx) }()
	defer func() {
		w.f.SetReadDeadline(time.Now()) // ends read
		<-readErr
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			readErr <- err // for the deferred wait
			return err
		case <-w.wake:
		}
		// The first change of a window: wait the window out, merging.
		t := time.NewTimer(opt.Window)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		ev, end := w.flush()
		if len(ev.Changes) > 0 || ev.Notice != "" {
			if err := send(ev); err != nil {
				return err
			}
		}
		if end {
			return nil
		}
	}
}

type watcher struct {
	ws   *workspace.Workspace
	root string // the directory watched, workspace-relative
	opt  WatchOptions
	f    *os.File
	fd   int

	mu      sync.Mutex
	wds     map[int]string // watch descriptor -> directory
	dirs    map[string]int // directory -> watch descriptor
	ignores map[string]*scan.IgnoreList
	pending map[string]*pendingChange
	order   int
	notice  []string
	capped  bool // a directory was left unwatched for the cap
	dropped int  // changes dropped for MaxPending
	gone    bool // the watched directory itself went away
	wake    chan struct{}
}

type pendingChange struct {
	Change
	order int
}

func (w *watcher) takeNotice() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.takeNoticeLocked()
}

func (w *watcher) takeNoticeLocked() string {
	if w.capped {
		w.notice = append(w.notice, fmt.Sprintf("only %d directories are watched (the cap); changes under the others are not reported", w.opt.MaxDirs))
		w.capped = false
	}
	if w.dropped > 0 {
		w.notice = append(w.notice, fmt.Sprintf("changes of %d more paths in this window were not reported (at most %d a window)", w.dropped, w.opt.MaxPending))
		w.dropped = 0
	}
	n := strings.Join(w.notice, "; ")
	w.notice = nil
	return n
}

// ignored reports whether the entry rel (in directory dir) is left out:
// .git, and what the .gitignore files in force say.
func (w *watcher) ignored(dir, rel string, isDir bool) bool {
	name := path.Base(rel)
	if name == ".git" {
		return true
	}
	ign, ok := w.ignores[dir]
	if !ok {
		ign = scan.IgnoresFor(w.ws.Root(), dir)
		w.ignores[dir] = ign
	}
	return ign.Ignored(rel, name, isDir)
}

// add watches directory rel and, when the watch is recursive, the
// directories below it not ignored; found, when not nil, gets every
// entry below rel (a directory that appeared: what is in it was created
// before its watch could report it). w.mu is not held.
func (w *watcher) add(rel string, found func(Change)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.addLocked(rel, found, rel == w.root)
}

func (w *watcher) addLocked(rel string, found func(Change), top bool) error {
	if _, ok := w.dirs[rel]; ok {
		return nil
	}
	if len(w.dirs) >= w.opt.MaxDirs {
		w.capped = true
		return nil
	}
	d, err := w.ws.Root().Open(rel)
	if err != nil {
		if top {
			return workspace.MapError(rel, err)
		}
		return nil // gone meanwhile
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		if top {
			return errdefs.Failed("%q is not a directory; watch its directory", rel)
		}
		return nil
	}
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(int(d.Fd())), watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			// fs.inotify.max_user_watches is reached.
			w.notice = append(w.notice, "the system's inotify watch limit (fs.inotify.max_user_watches) is reached; some directories are not watched")
			if top {
				return errdefs.Wrap(errdefs.ErrResourceExhausted, err, "cannot watch: the system's inotify watch limit (fs.inotify.max_user_watches) is reached")
			}
			return nil
		}
		if top {
			return errdefs.Wrap(errdefs.ErrFailed, err, "cannot watch %q: %v", rel, err)
		}
		return nil
	}
	w.wds[wd], w.dirs[rel] = rel, wd
	if !w.opt.Recursive && !top {
		return nil
	}
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		child := path.Join(rel, e.Name())
		isDir := e.Type()&fs.ModeType == fs.ModeDir // a symlink is not followed
		if w.ignored(rel, child, isDir) {
			continue
		}
		if found != nil {
			found(Change{Path: child, Kind: Created, Dir: isDir})
		}
		if isDir && w.opt.Recursive {
			w.addLocked(child, found, false)
		}
	}
	return nil
}

// forget drops the watches of dir and the directories below it.
func (w *watcher) forgetLocked(dir string) {
	for d, wd := range w.dirs {
		if d == dir || strings.HasPrefix(d, dir+"/") {
			unix.InotifyRmWatch(w.fd, uint32(wd))
			delete(w.dirs, d)
			delete(w.wds, wd)
		}
	}
}

// note merges a change of one path into the window.
func (w *watcher) noteLocked(c Change) {
	p, ok := w.pending[c.Path]
	if !ok {
		if len(w.pending) >= w.opt.MaxPending {
			w.dropped++
			return
		}
		w.order++
		w.pending[c.Path] = &pendingChange{Change: c, order: w.order}
		select {
		case w.wake <- struct{}{}:
		default:
		}
		return
	}
	p.Dir = c.Dir
	switch {
	case p.Kind == Created && c.Kind == Removed:
		delete(w.pending, c.Path) // came and went within the window
	case p.Kind == Created:
		// created, then changed: created
	case p.Kind == Removed && c.Kind == Created:
		p.Kind = Changed // replaced
	default:
		p.Kind = c.Kind
	}
}

// flush returns the window's changes and notice, and whether the watch
// ends (its directory went away).
func (w *watcher) flush() (WatchEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ps := make([]*pendingChange, 0, len(w.pending))
	for _, p := range w.pending {
		ps = append(ps, p)
	}
	clear(w.pending)
	slices.SortFunc(ps, func(a, b *pendingChange) int { return a.order - b.order })
	ev := WatchEvent{Changes: make([]Change, len(ps))}
	for i, p := range ps {
		ev.Changes[i] = p.Change
	}
	if w.gone {
		w.notice = append(w.notice, fmt.Sprintf("%s was removed or moved away; the watch ends", w.root))
	}
	ev.Notice = w.takeNoticeLocked()
	return ev, w.gone
}

// read reads inotify events until ctx ends or the file is closed.
func (w *watcher) read(ctx context.Context) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return errdefs.Wrap(errdefs.ErrInternal, err, "watch: reading inotify events: %v", err)
		}
		w.mu.Lock()
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			e := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if e.Len > 0 {
				b := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(e.Len)]
				name = strings.TrimRight(string(b), "\x00")
			}
			off += unix.SizeofInotifyEvent + int(e.Len)
			w.eventLocked(int(e.Wd), e.Mask, name)
		}
		w.mu.Unlock()
	}
}

func (w *watcher) eventLocked(wd int, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.notice = append(w.notice, "the kernel's event queue overflowed: some changes were lost")
		select {
		case w.wake <- struct{}{}:
		default:
		}
		return
	}
	dir, ok := w.wds[wd]
	if !ok {
		return
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.wds, wd)
		delete(w.dirs, dir)
		return
	}
	if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
		if dir == w.root {
			w.gone = true
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		return
	}
	if name == "" {
		return
	}
	rel := path.Join(dir, name)
	isDir := mask&unix.IN_ISDIR != 0
	if name == ".gitignore" {
		clear(w.ignores) // the rules changed
	}
	if w.ignored(dir, rel, isDir) {
		return
	}
	switch {
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		w.noteLocked(Change{Path: rel, Kind: Created, Dir: isDir})
		if isDir && w.opt.Recursive {
			w.addLocked(rel, w.noteLocked, false)
		}
	case mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
		w.noteLocked(Change{Path: rel, Kind: Removed, Dir: isDir})
		if isDir {
			w.forgetLocked(rel)
		}
	case mask&(unix.IN_MODIFY|unix.IN_CLOSE_WRITE) != 0 && !isDir:
		w.noteLocked(Change{Path: rel, Kind: Changed})
	}
}
