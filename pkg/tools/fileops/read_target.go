package fileops

import (
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// How the read operations find what they read.
//
// read_file, list_dir, glob, grep_search and read_many_files resolve a path
// from the model as the write operations do (see place.go): the way the
// kernel will resolve it, symlinks followed. A path that resolves outside
// the workspace is refused with ErrDenied unless policy allowed it for this
// call (tools.Call.OutsideAllowed): the resolved path, or a directory above
// it, must be in call.Outside. A symlink in the workspace that points
// outside is judged by its target, so it reads only when policy approved
// that target.
//
// The path is then opened through a root (workspace.RootFor): the
// workspace's os.Root inside, and outside a root on the parent directory
// that RootFor checked to be the directory resolved. The final component is
// opened relative to its open parent with O_NOFOLLOW, so a symlink swapped
// in after the check is refused, not followed; a directory walk continues
// from that descriptor by single names without following symlinks (see
// walk.go). What is read is therefore the approved path or below it, never
// a sibling of it.
//
// Names in results. Inside the workspace results name entries by their
// workspace-relative path, as the model wrote the path (a symlinked
// directory keeps its name; a path with ".." is named by where it resolved,
// since ".." after a symlink does not cancel lexically). Outside they name
// entries by their absolute path: list_dir's entries, glob's matches and
// grep_search's path:line:text lines all carry the absolute path, which the
// model can pass back as is.

// readTarget is a resolved path a read operation works on.
type readTarget struct {
	loc  workspace.Location
	root *os.Root // what name is opened through
	name string   // loc's path in root; "." for root itself
	// show is how results name loc: workspace-relative inside, absolute
	// outside.
	show    string
	closeFn func() error
	// dirFD is the workspace directory's descriptor when root is the
	// workspace's root (loc inside), else -1.
	dirFD int
	// use is what the guard was asked about loc; open asks it again about
	// the file it opened (atuse.go).
	use *tools.Use
	f   *FileOperations
}

// close releases the root of an outside target.
func (t *readTarget) close() {
	if t.closeFn != nil {
		t.closeFn()
	}
}

// locateRead resolves p, an argument named field, for a read: it refuses a
// path outside the workspace that call was not allowed (ErrDenied), and
// opens the root the target is read through. The caller closes the target.
func (f *FileOperations) locateRead(call *tools.Call, field, p string) (*readTarget, error) {
	loc, use, err := f.locateUse(call, field, p, true)
	if err != nil {
		return nil, err
	}
	return f.readTargetOf(p, loc, use)
}

// locateJudgedRead is locateRead for a target opened with readTarget.open
// (read_file): a path that policy found plain when it decided the call
// (tools.Call.Judged) is taken where policy found it, without resolving
// it again. Its open then follows no symlink below the workspace's
// descriptor, so a path that changed since the decision is refused there
// (see tools.JudgedPath); the guard is still asked about it (checkUse).
func (f *FileOperations) locateJudgedRead(call *tools.Call, field, p string) (*readTarget, error) {
	loc, ok := f.judgedLocation(call, p)
	if !ok {
		return f.locateRead(call, field, p)
	}
	use := f.use(call, p, loc)
	if err := f.checkUse(use); err != nil {
		return nil, err
	}
	return f.readTargetOf(p, loc, use)
}

// judgedLocation returns where policy found p, when it found p plain
// (tools.JudgedPath) and p names that place lexically in this workspace.
func (f *FileOperations) judgedLocation(call *tools.Call, p string) (workspace.Location, bool) {
	if len(call.Judged) == 0 {
		return workspace.Location{}, false
	}
	loc, ok := f.ws.Lexical(p)
	if !ok || !loc.Inside {
		return loc, false
	}
	for _, j := range call.Judged {
		if j.Given == p && j.Abs == loc.Abs {
			loc.Exists, loc.Type = true, j.Type // as policy found it
			return loc, true
		}
	}
	return loc, false
}

// readTargetOf opens the root of loc, the location of p that use checked.
func (f *FileOperations) readTargetOf(p string, loc workspace.Location, use *tools.Use) (*readTarget, error) {
	if f.readLocated != nil {
		f.readLocated(loc)
	}
	root, name, closeFn, err := f.ws.RootFor(loc)
	if err != nil {
		if !loc.Inside && f.moved(loc) {
			return nil, changedWhileRead(loc, err)
		}
		return nil, err
	}
	t := &readTarget{loc: loc, root: root, name: name, show: f.showName(p, loc), closeFn: closeFn, dirFD: -1, use: use, f: f}
	if root == f.ws.Root() {
		t.dirFD = f.ws.DirFD()
	}
	return t, nil
}

// moved reports whether loc's path no longer resolves to where it did.
func (f *FileOperations) moved(loc workspace.Location) bool {
	now, err := f.ws.Resolve(loc.Given)
	return err != nil || now.Abs != loc.Abs
}

// showName is how results name the target p resolved to (see above).
func (f *FileOperations) showName(p string, loc workspace.Location) string {
	if !loc.Inside {
		return loc.Abs
	}
	if !workspace.HasDotDot(p) {
		if rel, err := f.ws.Rel(p); err == nil {
			return rel
		}
	}
	return loc.Rel
}

// open opens the target read-only (see openNoFollow), and checks what it
// opened (atuse.go): that the kernel still names it by the checked path,
// and, through the guard, that it is not a sensitive file under another
// name.
//
// A target that the resolve step found to be neither a regular file nor a
// directory (a FIFO, a device, a socket: see special) is refused before
// anything is opened, with errNotRegular and st.Mode holding that type:
// opening a device node can act by itself (a watchdog starts, a tape
// rewinds, a terminal's line settings are touched), whatever is read
// after. The type is the one workspace.Resolve lstat'ed, so a regular
// file costs no extra system call. A file swapped for another type
// between that lstat and the open is caught by the fstat after the open
// (the caller checks st's type) and opened with O_NONBLOCK|O_NOCTTY (see
// scan.OpenAt); only a device swapped in at that moment would still be
// opened, and making one needs mknod(2), which commands in toold's sandbox
// cannot do.
func (t *readTarget) open() (int, unix.Stat_t, error) {
	var (
		fd  int
		st  unix.Stat_t
		err error
	)
	if t.special() {
		st.Mode = t.loc.Type
		return -1, st, &os.PathError{Op: "open", Path: t.name, Err: errNotRegular}
	}
	// A name in the workspace directory itself is opened by one openat on
	// the workspace's descriptor: no directory on the way could have been
	// renamed, so the kernel's name of the file is not asked (a readlink
	// of /proc/self/fd, the costliest call of a small read) — unless the
	// file's status changed since just before the open (unchangedSince).
	// The name opened may have been taken from the file meanwhile (a rename
	// over it), leaving it one link, a sensitive one: a hard link to .env
	// renamed onto the name and renamed over again. checkOpened, which asks
	// only about files of more than one link, would then take its one name
	// for the checked one; the kernel's name says "(deleted)".
	direct := false
	var opening time.Time
	if t.dirFD >= 0 {
		if direct = t.name != "." && !strings.Contains(t.name, "/"); direct {
			opening = time.Now()
		}
		fd, st, err = openBelowNoFollow(t.dirFD, t.name)
	} else {
		fd, st, err = openNoFollow(t.root, t.name, 0)
	}
	if err != nil {
		return fd, st, err
	}
	if !(direct && unchangedSince(&st, opening)) && !openedAt(fd, t.loc.Abs) {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "open", Path: t.name, Err: errMoved}
	}
	if t.f != nil {
		if err := t.f.checkOpened(t.use, &st); err != nil {
			unix.Close(fd)
			return -1, st, err
		}
	}
	return fd, st, nil
}

// special reports whether the resolve step found the target to be neither
// a regular file nor a directory (loc.Type: 0 when unknown).
func (t *readTarget) special() bool {
	switch t.loc.Type {
	case 0, unix.S_IFREG, unix.S_IFDIR:
		return false
	}
	return true
}

// ctimeSlack covers the coarse clock the kernel stamps a file's status
// change time with (it lags the real time by at most a tick).
const ctimeSlack = 100 * time.Millisecond

// unchangedSince reports whether the status st (of a file opened at t or
// later) last changed before t: no link to it was made or removed, and it
// was not renamed, from its open to its fstat.
func unchangedSince(st *unix.Stat_t, t time.Time) bool {
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec).Before(t.Add(-ctimeSlack))
}

// errMoved is the error of a file that, once opened, is no longer at the
// path that was checked (a directory on its way was renamed meanwhile).
var errMoved = errors.New("it was moved or replaced while it was being opened")

// openBelowNoFollow opens name, a clean workspace-relative path (no ".."),
// read-only below the directory dirfd, one component at a time with
// O_NOFOLLOW: a symlink anywhere on the way (one swapped in after the path
// was checked) is refused (errSwapped), as openNoFollow refuses one in the
// final component. Opening this way skips what os.Root adds to each open
// (poller registration) for files read once with blocking reads.
func openBelowNoFollow(dirfd int, name string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	dir, base := path.Split(name)
	if base == "" || base == "." {
		dir, base = "", "."
	}
	d := dirfd
	for _, c := range strings.Split(strings.Trim(dir, "/"), "/") {
		if c == "" || c == "." {
			continue
		}
		next, err := scan.OpenAt(d, c, unix.O_DIRECTORY)
		if d != dirfd {
			unix.Close(d)
		}
		if err != nil {
			if err == unix.ELOOP || err == unix.ENOTDIR {
				err = errSwapped
			}
			return -1, st, &os.PathError{Op: "open", Path: name, Err: err}
		}
		d = next
	}
	fd, err := scan.OpenAt(d, base, 0)
	if d != dirfd {
		unix.Close(d)
	}
	if err != nil {
		if err == unix.ELOOP {
			err = errSwapped
		}
		return -1, st, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if openedHook != nil {
		openedHook(name)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	return fd, st, nil
}

// openedHook, when set (by tests only), runs in openBelowNoFollow between
// the open of name and its fstat.
var openedHook func(name string)

// openNoFollow opens name ("." for root itself) through root, read-only,
// with the open flags flags added (O_DIRECTORY to open only a directory):
// its parent directory through the root, then the final component relative
// to it without following a symlink (errSwapped) and without blocking on a
// FIFO. With O_DIRECTORY, a final component that is not a directory is
// scan.ErrNotDir. It returns the descriptor, which the caller closes, and
// its status.
func openNoFollow(root *os.Root, name string, flags int) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	dir, base := path.Split(name)
	if base == "" || base == "." || base == ".." {
		dir, base = name, "."
	}
	d, _, err := openDirAt(root, strings.TrimSuffix(dir, "/"), false, nil)
	if err != nil {
		return -1, st, err
	}
	defer d.Close()
	fd, err := scan.OpenAt(int(d.Fd()), base, flags)
	if err == unix.ENOTDIR && flags&unix.O_DIRECTORY != 0 {
		// O_DIRECTORY|O_NOFOLLOW may say ENOTDIR of a symlink.
		if unix.Fstatat(int(d.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP
		} else {
			return -1, st, scan.ErrNotDir
		}
	}
	if err != nil {
		if err == unix.ELOOP {
			err = errSwapped
		}
		return -1, st, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	return fd, st, nil
}

// mapErr maps an error of reading the target for the model.
func (t *readTarget) mapErr(err error) error {
	if errors.Is(err, errSwapped) || errors.Is(err, errMoved) {
		return changedWhileRead(t.loc, err)
	}
	if errors.Is(err, errNotRegular) {
		return errdefs.Failed("%q is not a regular file (%s); nothing was opened", t.loc.Given, typeName(scan.StatType(t.loc.Type)))
	}
	return workspace.MapError(t.loc.Given, err)
}

// changedWhileRead is the error of a path that changed (a component turned
// into a symlink) between its check and its opening.
func changedWhileRead(loc workspace.Location, cause error) error {
	return &errdefs.Error{
		Class: errdefs.ErrDenied,
		Msg: fmt.Sprintf("%q changed while it was being read (it, or a directory in it, is now a symlink that leads elsewhere); "+
			"nothing was read", loc.Given),
		Rule:  "workspace",
		Cause: cause,
	}
}

// openDir opens the target to walk it, with an error the model can act on
// when it is not a directory. op names the operation for the hint.
func (t *readTarget) openDir(op string) (*scan.Node, error) {
	d, err := OpenStart(t.root, t.name, t.show)
	if errors.Is(err, scan.ErrNotDir) {
		hint := "use read_file to read it"
		if op != "list_dir" {
			hint = "give its directory as path"
		}
		return nil, errdefs.Failed("%q is a file, not a directory; %s", t.loc.Given, hint)
	}
	if err != nil {
		return nil, t.mapErr(err)
	}
	return d, nil
}

// startIgnores returns the .gitignore rules that apply above a walk of the
// target: those of the workspace's directories from its root down to the
// target for a target inside, none for one outside (the walk applies the
// .gitignore files it finds from the target down, as for any directory).
func (f *FileOperations) startIgnores(t *readTarget) *scan.IgnoreList {
	if !t.loc.Inside {
		return nil
	}
	return scan.LoadAncestorIgnores(f.ws.Root(), t.show)
}

// OpenStart opens the directory name ("." for root itself) through root to
// start a walk there; rel is how the walk names it (Node.Rel). The final
// component is not followed if it is a symlink (see openNoFollow). It
// returns ErrNotDir when name is not a directory, which is never opened
// (O_DIRECTORY: a device or FIFO is refused by the kernel before its open).
func OpenStart(root *os.Root, name, rel string) (*scan.Node, error) {
	fd, st, err := openNoFollow(root, name, unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return nil, scan.ErrNotDir
	}
	return &scan.Node{Rel: rel, Fd: fd}, nil
}
