package scan

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The parallel directory walk of list_dir, glob and grep_search.
//
// Confinement. The start directory is opened through a root (the
// workspace's os.Root, or for a directory outside the workspace that policy
// allowed, a root on its parent; see read_target.go), which refuses every
// way out of its tree, and its last component is opened without following
// a symlink. From there the walk opens
// each directory and file with openat(2) relative to its parent's open
// descriptor, by a single name read from that directory (never "..", never
// containing "/"), with O_NOFOLLOW: a symlink is never followed, so nothing
// the walk opens can be outside the directory it started in. This is the
// guarantee os.Root gives (and, like os.Root, it does not stop a directory
// that is open already from being moved elsewhere meanwhile), at one system
// call per open. Going through os.Root for every entry is slower (the grep
// and glob benchmarks of pkg/tools/fileops measure a walk of GOROOT/src):
// its Open also tries to register each file with the poller and sets and
// clears O_NONBLOCK. Directories are read with getdents64 directly for
// the same reason.
//
// Filters. Entries named ".git" are always skipped, dotfiles (a name
// starting with ".") unless Config.Dotfiles, entries matched by the
// .gitignore files of the directories above them unless Config.noIgnore
// (from the workspace root down in a walk inside the workspace, from the
// start directory down in one outside: the caller sets the start's
// Node.ign), and entries Config.Withhold names (sensitive
// files, with a directory's whole subtree). Symlinks are reported as entries
// and never descended.
//
// Order. Workers take entries from a shared LIFO stack, so the walk is depth
// first and visits entries in no particular order; callers sort.

// Config says what a walk visits.
type Config struct {
	Dotfiles bool // visit entries whose names start with "." (".git" never)
	noIgnore bool // do not apply .gitignore files
	MaxDepth int  // 0: no limit; 1: only the start directory's entries
	Inline   bool // visit files while reading their directory instead of queuing them
	Workers  int  // goroutines; 0 means GOMAXPROCS
	// Withhold, when set, reports whether to skip the entry at rel
	// (named as Node.Rel names directories); it is called concurrently.
	Withhold func(rel string) bool
}

// Visitor receives the entries of a walk. Its methods are called
// concurrently from the walk's workers; worker is in [0, workers) and no two
// calls with the same worker run at once.
type Visitor interface {
	// Dir is called for each directory that passes the filters, with its
	// path (named as Node.Rel names directories); it reports whether to
	// descend into it.
	Dir(worker int, parent *Node, name, rel string) bool
	// File is called for every other entry (files, symlinks, devices...)
	// that passes the filters. parent.fd stays open during the call.
	File(worker int, parent *Node, name string, typ fs.FileMode)
}

// Node is a directory open during a walk. Its descriptor stays open while
// entries of the directory wait in the queue, and is closed after the last.
type Node struct {
	// Rel names the directory in results: workspace-relative ("." for the
	// root) in a walk that starts inside the workspace, absolute in one
	// that starts outside; slash-separated either way.
	Rel   string
	Fd    int // owned: closed after the last reference is dropped
	Ign   *IgnoreList
	Depth int // 0 for the start directory
	refs  atomic.Int32
}

// Child returns the path of the entry name in d, named as d is.
func (d *Node) Child(name string) string {
	switch d.Rel {
	case ".":
		return name
	case "/":
		return "/" + name
	}
	return d.Rel + "/" + name
}

func (d *Node) Release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.Fd)
	}
}

// Item is a queued entry; it holds a reference on its directory.
type Item struct {
	Dir  *Node
	name string
	typ  fs.FileMode
}

// Walker runs one walk.
type Walker struct {
	Cfg      Config
	v        Visitor
	Stop     atomic.Bool
	Ignored  atomic.Int64 // entries skipped by a .gitignore
	Withheld atomic.Int64 // entries skipped by Config.Withhold
	Errs     atomic.Int64 // directories that could not be opened or read
	scratch  []dirScratch // per worker

	ctxDone <-chan struct{} // the run's ctx.Done(), polled between entries

	mu    sync.Mutex
	cond  sync.Cond
	items []Item
	busy  int // items taken and not yet finished
	idle  int // workers waiting for items
	done  bool
}

func NewWalker(cfg Config, v Visitor) *Walker {
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	w := &Walker{Cfg: cfg, v: v, scratch: make([]dirScratch, cfg.Workers)}
	w.cond.L = &w.mu
	return w
}

// Abort stops the walk: workers finish the entry in hand and exit. It is
// safe to call from any goroutine, more than once.
func (w *Walker) Abort() {
	w.Stop.Store(true)
	w.mu.Lock()
	w.done = true
	w.cond.Broadcast()
	w.mu.Unlock()
}

// NewNode starts a walk at the directory open as fd, which the walk takes
// over (and closes); rel is how the walk names it (Node.rel).
func NewNode(fd int, rel string) *Node { return &Node{Rel: rel, Fd: fd} }

// MaxContext is the most lines of context a Searcher shows around a match.
const MaxContext = 10

// ErrNotDir is the error of OpenStart for a start that is not a directory.
var ErrNotDir = errors.New("not a directory")

// Run walks the tree below start, which it takes over (and closes). It
// returns when every entry has been visited, or early when ctx is done or
// abort is called; complete is false then. Either way every goroutine and
// descriptor of the walk is gone when it returns.
func (w *Walker) Run(ctx context.Context, start *Node) (complete bool) {
	// The AfterFunc wakes idle workers; busy ones see ctxDone themselves,
	// without waiting for it to be scheduled.
	w.ctxDone = ctx.Done()
	stopAfter := context.AfterFunc(ctx, w.Abort)
	defer stopAfter()

	w.items = w.readDir(0, start, nil)
	var wg sync.WaitGroup
	for i := range w.Cfg.Workers {
		wg.Go(func() { w.work(i) })
	}
	wg.Wait()
	for _, it := range w.items { // left over after an abort
		it.Dir.Release()
	}
	w.items = nil
	return !w.Stop.Load()
}

func (w *Walker) work(id int) {
	var batch []Item
	for {
		it, ok := w.take()
		if !ok {
			return
		}
		batch = batch[:0]
		if it.typ.IsDir() {
			batch = w.enter(id, it, batch)
		} else {
			w.v.File(id, it.Dir, it.name, it.typ)
			it.Dir.Release()
		}
		w.finish(batch)
	}
}

func (w *Walker) take() (Item, bool) {
	select {
	case <-w.ctxDone:
		w.Abort()
	default:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.items) == 0 && !w.done {
		if w.busy == 0 {
			w.done = true
			w.cond.Broadcast()
			break
		}
		w.idle++
		w.cond.Wait()
		w.idle--
	}
	if w.done {
		return Item{}, false
	}
	it := w.items[len(w.items)-1]
	w.items[len(w.items)-1] = Item{}
	w.items = w.items[:len(w.items)-1]
	w.busy++
	return it, true
}

func (w *Walker) finish(batch []Item) {
	w.mu.Lock()
	w.items = append(w.items, batch...)
	w.busy--
	if w.idle > 0 {
		switch {
		case len(batch) > 1, w.busy == 0 && len(w.items) == 0:
			w.cond.Broadcast()
		case len(batch) == 1:
			w.cond.Signal()
		}
	}
	w.mu.Unlock()
}

// enter opens the directory of it and reads it.
func (w *Walker) enter(id int, it Item, batch []Item) []Item {
	fd, err := OpenAt(it.Dir.Fd, it.name, unix.O_DIRECTORY)
	it.Dir.Release()
	if err != nil {
		w.Errs.Add(1)
		return batch
	}
	d := &Node{
		Rel:   it.Dir.Child(it.name),
		Fd:    fd,
		Ign:   it.Dir.Ign,
		Depth: it.Dir.Depth + 1,
	}
	return w.readDir(id, d, batch)
}

// readDir reads the directory d, visits or queues its entries, and appends
// the queued ones to batch. It drops the caller's reference on d.
func (w *Walker) readDir(id int, d *Node, batch []Item) []Item {
	ents, err := w.scratch[id].list(d.Fd)
	if err != nil {
		w.Errs.Add(1)
	}
	if !w.Cfg.noIgnore {
		for _, e := range ents {
			if e.name == ".gitignore" && e.typ.IsRegular() {
				d.Ign = d.Ign.push(d.Rel, readIgnoreAt(d.Fd))
				break
			}
		}
	}
	n0 := len(batch)
	descend := w.Cfg.MaxDepth <= 0 || d.Depth+1 < w.Cfg.MaxDepth
	for _, e := range ents {
		name := e.name
		if name == ".git" || (!w.Cfg.Dotfiles && name[0] == '.') {
			continue
		}
		typ := e.typ
		isDir := typ.IsDir()
		var rel string
		if isDir {
			rel = d.Child(name)
		}
		if d.Ign != nil && !w.Cfg.noIgnore {
			if rel == "" {
				rel = d.Child(name)
			}
			if d.Ign.Ignored(rel, name, isDir) {
				w.Ignored.Add(1)
				continue
			}
		}
		if w.Cfg.Withhold != nil {
			if rel == "" {
				rel = d.Child(name)
			}
			if w.Cfg.Withhold(rel) {
				w.Withheld.Add(1)
				continue
			}
		}
		switch {
		case isDir:
			if w.v.Dir(id, d, name, rel) && descend {
				batch = append(batch, Item{Dir: d, name: name, typ: fs.ModeDir})
			}
		case w.Cfg.Inline:
			w.v.File(id, d, name, typ)
		default:
			batch = append(batch, Item{Dir: d, name: name, typ: typ})
		}
	}
	d.refs.Store(int32(len(batch)-n0) + 1)
	d.Release()
	return batch
}

// OpenAt opens name, a single path component, in the directory dirfd,
// read-only, without following a symlink, without blocking on a FIFO and
// without making a terminal the process's controlling terminal. Callers
// refuse what they will not read before opening it where its type is
// known: opening a device can act by itself.
func OpenAt(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// ReadFull reads from fd into p until p is full, end of file or an error;
// eof reports the end of the file.
func ReadFull(fd int, p []byte) (n int, eof bool, err error) {
	for n < len(p) {
		m, err := unix.Read(fd, p[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, false, err
		case m == 0:
			return n, true, nil
		}
		n += m
	}
	return n, false, nil
}

// readIgnoreAt reads the .gitignore file in the directory dirfd, which its
// caller listed as a regular file; one that is no longer regular once open
// is skipped.
func readIgnoreAt(dirfd int) []ignoreRule {
	fd, err := OpenAt(dirfd, ".gitignore", 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	buf := make([]byte, 4096)
	n := 0
	for {
		m, eof, err := ReadFull(fd, buf[n:])
		n += m
		if eof || err != nil || n >= maxIgnoreFile {
			break
		}
		buf = append(buf, make([]byte, len(buf))...)
	}
	return parseIgnore(buf[:n])
}

// dirent is a directory entry: a name and its type bits.
type dirent struct {
	name string
	typ  fs.FileMode
}

// dirScratch holds a worker's buffers for reading directories.
type dirScratch struct {
	buf  []byte
	ents []dirent
}

// list reads the entries of the directory fd, "." and ".." left out. The
// result is valid until the next call. Entries whose type the file system
// does not report are lstat'ed.
func (sc *dirScratch) list(fd int) ([]dirent, error) {
	if sc.buf == nil {
		sc.buf = make([]byte, 32<<10)
	}
	sc.ents = sc.ents[:0]
	for {
		n, err := unix.Getdents(fd, sc.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return sc.ents, err
		}
		if n <= 0 {
			return sc.ents, nil
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
		for b := sc.buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			ino, dt, name := binary.NativeEndian.Uint64(b[0:8]), b[18], b[19:reclen]
			b = b[reclen:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if ino == 0 || len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			e := dirent{name: string(name), typ: direntType(dt)}
			if dt == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue // gone meanwhile
				}
				e.typ = StatType(st.Mode)
			}
			sc.ents = append(sc.ents, e)
		}
	}
}

func direntType(dt byte) fs.FileMode {
	switch dt {
	case unix.DT_REG:
		return 0
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

func StatType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
