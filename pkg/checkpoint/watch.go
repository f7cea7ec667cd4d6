package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The watcher: one inotify watch per directory of the workspace, read only
// at call boundaries (drain), never by a goroutine of its own. inotify
// queues an event in the system call that changes a file, so once a
// command has exited every change it made is in the queue; draining it
// costs a read(2) when nothing changed, which is what keeps recording
// cheap on a large workspace (a walk of 10,000 files costs tens of
// milliseconds). A queue that overflowed (IN_Q_OVERFLOW: more than
// fs.inotify.max_queued_events changes between two boundaries) or a
// workspace with more directories than the watches allowed falls back to
// a walk of the whole workspace at each boundary.

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_MOVED_FROM |
	unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_EXCL_UNLINK

type watcher struct {
	fd  int
	wds map[int32]string // watch → directory, relative ("" is the root)
	buf []byte
	// full says the watches are not complete (no inotify, or too many
	// directories): every boundary walks the workspace.
	full bool
}

func newWatcher() *watcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	w := &watcher{fd: fd, wds: map[int32]string{}, buf: make([]byte, 64<<10)}
	if err != nil {
		w.fd, w.full = -1, true
	}
	return w
}

func (w *watcher) close() {
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// add watches the directory dir, open as f (through the workspace's root,
// so a symlink swapped in is never followed out of it).
func (w *watcher) add(f *os.File, dir string) {
	if w.full {
		return
	}
	wd, err := unix.InotifyAddWatch(w.fd, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), watchMask)
	if err != nil {
		// ENOSPC: fs.inotify.max_user_watches reached.
		w.full = true
		return
	}
	w.wds[int32(wd)] = dir
}

// forget drops the watches of dir and below (moved or removed: the kernel
// keeps a moved directory's watch, and add maps it to its new name).
func (w *watcher) forget(dir string) {
	for wd, d := range w.wds {
		if under(d, dir) {
			delete(w.wds, wd)
		}
	}
}

// drain reads what is queued and adds the paths it names to dirty. It
// returns false when events were lost (the caller walks everything).
func (w *watcher) drain(dirty map[string]bool) bool {
	if w.full {
		return false
	}
	ok := true
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n <= 0 || err != nil {
			return ok
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			name := ""
			if ev.Len > 0 {
				raw := w.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				name = strings.TrimRight(string(raw), "\x00")
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				ok = false
				continue
			}
			dir, known := w.wds[ev.Wd]
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(w.wds, ev.Wd)
				continue
			}
			if !known {
				continue
			}
			switch {
			case name != "":
				dirty[join(dir, name)] = true
			case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
				// The parent's event names it too, unless it is the root.
				if dir != "" {
					dirty[dir] = true
				}
			case ev.Mask&unix.IN_ATTRIB != 0 && dir != "":
				dirty[dir] = true
			}
		}
	}
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// under says p is dir or below it ("" is the root, above everything).
func under(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

// walk visits every entry below dir (relative; "" is the root), watching
// each directory before reading it, so a change made during the walk is
// queued. visit gets each path.
func (r *Recorder) walk(dir string, visit func(rel string)) {
	name := dir
	if name == "" {
		name = "."
	}
	f, err := r.root.OpenFile(name, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	r.watch.add(f, dir)
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil && len(ents) == 0 {
		return
	}
	for _, e := range ents {
		if r.stop.Load() {
			return
		}
		rel := join(dir, e.Name())
		if r.ignored(rel) {
			continue
		}
		visit(rel)
		if e.Type()&fs.ModeType == fs.ModeDir {
			r.walk(rel, visit)
		}
	}
}

// ignored says rel is never recorded: toold's own temporary files, and
// the store itself should it lie in the workspace.
func (r *Recorder) ignored(rel string) bool {
	if r.storeRel != "" && under(rel, r.storeRel) {
		return true
	}
	base := path.Base(rel)
	return strings.HasPrefix(base, ".") && strings.Contains(base, ".toold-") && strings.HasSuffix(base, ".tmp")
}
