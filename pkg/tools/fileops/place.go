package fileops

import (
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// How the write operations find what they change.
//
// A path from the model is resolved the way the kernel will resolve it
// (workspace.Resolve): symlinks followed, ".." applied to what came before.
// A path that resolves outside the workspace is refused unless policy
// allowed it for this call (tools.Call.OutsideAllowed), and the policy's
// guard checks what it resolves to now (atuse.go). Then the operation opens
// the entry's parent directory through a root (workspace.RootFor: the
// workspace's os.Root inside, a root verified against the check outside),
// one component at a time without following a symlink, and works on the
// entry with *at system calls relative to that open directory, by a single
// name, never following a symlink in it. Whatever is swapped in after the
// check, nothing but the checked entry is touched: a component that became
// a symlink is refused, and the final name is never followed.
//
// The final component. write_file, create_file, edit_file and make_dir
// follow a symlink in the final component, as an editor does: editing a
// link edits the file it points to (which must itself be allowed), and the
// link stays. delete_path and move_path act on the link itself, as rm and mv
// do. If the final component turns into a symlink between the check and the
// change, the operation refuses instead of following it.

// locate resolves p, an argument named field, for an operation that changes
// it (see resolvePath), and refuses a path outside the workspace that the
// call was not allowed.
func (f *FileOperations) locate(call *tools.Call, field, p string, follow bool) (workspace.Location, error) {
	loc, _, err := f.locateUse(call, field, p, follow)
	return loc, err
}

// locateUse is locate that also returns what the guard was asked about
// the location.
func (f *FileOperations) locateUse(call *tools.Call, field, p string, follow bool) (workspace.Location, *tools.Use, error) {
	loc, err := f.resolvePath(field, p, follow)
	if err != nil {
		return loc, nil, err
	}
	if !loc.Inside && !call.OutsideAllowed(loc.Abs) {
		return loc, nil, &errdefs.Error{
			Class: errdefs.ErrDenied,
			Msg: fmt.Sprintf("path %q is outside the workspace (it resolves to %s) and policy did not allow it for this call; "+
				"use a path inside the workspace (relative paths are resolved from the workspace root)", p, loc.Abs),
			Field: "/" + field,
			Rule:  "workspace",
		}
	}
	// Checked at use (atuse.go): what the path resolves to now.
	use := f.use(call, p, loc)
	if err := f.checkUse(use); err != nil {
		return loc, use, err
	}
	return loc, use, nil
}

// resolvePath resolves p, an argument named field. follow says whether a
// symlink in the final component is followed; when not, only the parent is
// resolved and the entry keeps its name.
func (f *FileOperations) resolvePath(field, p string, follow bool) (workspace.Location, error) {
	if p == "" {
		return workspace.Location{}, errdefs.Invalid("/"+field, "required", "%s is required: a path relative to the workspace root", field)
	}
	dir, base := splitLast(p)
	if follow || base == "" {
		return f.ws.Resolve(p)
	}
	loc, err := f.ws.Resolve(dir)
	if err != nil {
		return loc, err
	}
	return childLocation(loc, p, base), nil
}

// splitLast splits p into its directory and its last component; base is
// empty when the last component is "", "." or ".." (p names a directory by
// a path that must be resolved whole). Trailing slashes are dropped.
func splitLast(p string) (dir, base string) {
	t := strings.TrimRight(p, "/")
	if t == "" {
		return p, ""
	}
	i := strings.LastIndexByte(t, '/')
	dir, base = t[:i+1], t[i+1:]
	if base == "." || base == ".." {
		return p, ""
	}
	if dir == "" {
		dir = "."
	}
	return dir, base
}

// childLocation is the location of the entry base in the resolved directory
// dir, without resolving base.
func childLocation(dir workspace.Location, given, base string) workspace.Location {
	loc := workspace.Location{Given: given, Abs: filepath.Join(dir.Abs, base)}
	if dir.Inside {
		loc.Inside, loc.Rel = true, path.Join(dir.Rel, base)
	}
	if dir.Exists {
		_, err := os.Lstat(loc.Abs)
		loc.Exists = err == nil
	}
	return loc
}

// display is how results name a location: workspace-relative inside,
// absolute outside.
func display(loc workspace.Location) string {
	if loc.Inside {
		return loc.Rel
	}
	return loc.Abs
}

// place is an entry a write operation works on: its parent directory, open
// through a root, and its name there.
type place struct {
	loc  workspace.Location
	root *os.Root // the root dir was opened through
	// rootName is the entry's path in root.
	rootName string
	dir      *os.File // the parent directory
	fd       int      // dir's descriptor
	name     string   // the entry's name in dir: one component
	// madeDirs lists the parent directories created, outermost first.
	madeDirs []string
	// check, when set, is asked about the file read opens (atuse.go).
	check   func(st *unix.Stat_t) error
	closeFn func() error
}

// guardRead makes read check, with the guard, the file it opens for call,
// which named the path given.
func (f *FileOperations) guardRead(p *place, call *tools.Call, given string) {
	if f.guard == nil {
		return
	}
	u := f.use(call, given, p.loc)
	p.check = func(st *unix.Stat_t) error { return f.checkOpened(u, st) }
}

// close releases the directory and the root.
func (p *place) close() {
	if p.dir != nil {
		p.dir.Close()
	}
	if p.closeFn != nil {
		p.closeFn()
	}
}

// openPlace opens the parent directory of loc through its root. With mkdirs,
// missing parent directories are created (mode 0755 less the umask), each
// opened without following a symlink; otherwise a missing parent is an
// error that MapError turns into "does not exist". The caller closes the
// place.
func (f *FileOperations) openPlace(loc workspace.Location, mkdirs bool) (*place, error) {
	rootLoc, rootName := loc, ""
	if !loc.Inside {
		// The root for an outside path is its parent directory; when that
		// does not exist yet, the deepest ancestor that does.
		anc := filepath.Dir(loc.Abs)
		for anc != "/" {
			if fi, err := os.Lstat(anc); err == nil && fi.IsDir() {
				break
			}
			anc = filepath.Dir(anc)
		}
		if anc != filepath.Dir(loc.Abs) {
			rest, _ := filepath.Rel(anc, loc.Abs)
			first, _, _ := strings.Cut(rest, "/")
			rootLoc = workspace.Location{Given: loc.Given, Abs: filepath.Join(anc, first)}
			rootName = filepath.ToSlash(rest)
		}
	}
	root, name, closeFn, err := f.ws.RootFor(rootLoc)
	if err != nil {
		return nil, err
	}
	if rootName != "" {
		name = rootName
	}
	p := &place{loc: loc, root: root, rootName: name, closeFn: closeFn}
	if name == "." || name == "" {
		p.close()
		return nil, errdefs.Failed("%q is the workspace root (or a directory above it); name a file or directory in it", loc.Given)
	}
	dir, base := path.Split(name)
	p.name = base
	if g, ok := refuseGitEntry(strings.TrimSuffix(dir, "/"), base).(*errGitDir); ok {
		p.close()
		return nil, gitDirError(loc.Given, g)
	}
	check := gitDirCheck
	named := f.gitNamedSet()
	if named != nil {
		namedCheck := named.dirCheck()
		check = func(fd int, at string) error {
			if err := gitDirCheck(fd, at); err != nil {
				return err
			}
			return namedCheck(fd, at)
		}
	}
	p.dir, p.madeDirs, err = openDirAt(root, strings.TrimSuffix(dir, "/"), mkdirs, check)
	if err == nil && named != nil {
		if len(p.madeDirs) > 0 {
			// The set again, now that the way to the entry exists: a
			// path it names below a directory just made is there now.
			if again := f.gitNamedSet(); again != nil {
				named = again
			}
		}
		err = named.checkEntry(int(p.dir.Fd()), path.Join(strings.TrimSuffix(dir, "/"), base), base)
	}
	if _, ok := errors.AsType[*errGitDir](err); ok && named != nil {
		// Directories made on the way to a refused entry are taken back.
		for i := len(p.madeDirs) - 1; i >= 0; i-- {
			root.Remove(p.madeDirs[i])
		}
	}
	if err != nil {
		p.close()
		if g, ok := errors.AsType[*errGitDir](err); ok {
			return nil, gitDirError(loc.Given, g)
		}
		return nil, mapErr(loc, err)
	}
	p.fd = int(p.dir.Fd())
	if !openedAt(p.fd, filepath.Dir(loc.Abs)) {
		// A directory on the way was renamed since the path was checked.
		p.close()
		return nil, mapErr(loc, &fs.PathError{Op: "open", Path: loc.Given, Err: errMoved})
	}
	if !loc.Inside {
		for i, d := range p.madeDirs {
			p.madeDirs[i] = filepath.Join(root.Name(), d)
		}
	}
	return p, nil
}

// openDirAt opens the directory dir ("" or "." for the root itself) through
// root, one component at a time relative to the directory opened before,
// never following a symlink: a component that turned into a symlink since
// the path was checked is refused (errSwapped), whether it leads out of the
// root or elsewhere in it. With mkdirs it creates the missing components,
// each with mkdirat(2) in its parent and then opened the same way. It
// returns the created directories, relative to root. dir is a clean
// relative path (no "..").
//
// check, when set, is asked about every directory opened (the root
// included, as "."), before anything is created in it or below it; its
// error ends the walk, returned as is, and nothing more is created.
func openDirAt(root *os.Root, dir string, mkdirs bool, check func(fd int, at string) error) (*os.File, []string, error) {
	d, err := root.Open(".")
	if err != nil {
		return nil, nil, err
	}
	if check != nil {
		if err := check(int(d.Fd()), "."); err != nil {
			d.Close()
			return nil, nil, err
		}
	}
	if dir == "" || dir == "." {
		return d, nil, nil
	}
	comps := strings.Split(dir, "/")
	var made []string
	for i, c := range comps {
		if c == "" || c == "." {
			continue
		}
		at := path.Join(comps[:i+1]...)
		if c == ".." {
			d.Close()
			return nil, nil, &fs.PathError{Op: "open", Path: at, Err: errSwapped}
		}
		fd := int(d.Fd())
		nfd, err := scan.OpenAt(fd, c, unix.O_DIRECTORY)
		if err == unix.ENOENT && mkdirs {
			switch merr := unix.Mkdirat(fd, c, 0o755); merr {
			case nil:
				made = append(made, at)
			case unix.EEXIST:
			default:
				d.Close()
				return nil, nil, &fs.PathError{Op: "mkdir", Path: at, Err: merr}
			}
			nfd, err = scan.OpenAt(fd, c, unix.O_DIRECTORY)
		}
		if err == unix.ENOTDIR {
			// A symlink with O_DIRECTORY|O_NOFOLLOW may say ENOTDIR.
			var st unix.Stat_t
			if unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			}
		}
		d.Close()
		if err != nil {
			if err == unix.ELOOP {
				err = errSwapped
			}
			return nil, nil, &fs.PathError{Op: "open", Path: at, Err: err}
		}
		d = os.NewFile(uintptr(nfd), at)
		if check != nil {
			if err := check(nfd, at); err != nil {
				d.Close()
				return nil, made, err
			}
		}
	}
	return d, made, nil
}

// errSwapped is the error of an entry that turned into a symlink after its
// path was checked.
var errSwapped = errors.New("it was replaced by a symlink after the path was checked; nothing was changed")

// lstat returns the status of the entry, not following a symlink; ok is
// false when it does not exist.
func (p *place) lstat() (st unix.Stat_t, ok bool, err error) {
	for {
		err = unix.Fstatat(p.fd, p.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == nil:
		return st, true, nil
	case err == unix.ENOENT:
		return st, false, nil
	}
	return st, false, &fs.PathError{Op: "stat", Path: p.loc.Given, Err: err}
}

// fileKind names the type of a stat mode for messages and results.
func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	}
	return "special file"
}

// mapErr maps an error of an operation on loc for the model.
func mapErr(loc workspace.Location, err error) error {
	if errors.Is(err, errSwapped) || errors.Is(err, errMoved) {
		cause := errSwapped
		if errors.Is(err, errMoved) {
			cause = errMoved
		}
		return &errdefs.Error{
			Class: errdefs.ErrDenied,
			Msg:   fmt.Sprintf("%q changed while it was being written: %v", loc.Given, cause),
			Rule:  "workspace",
			Cause: err,
		}
	}
	if workspace.IsEscape(err) && !loc.Inside {
		return &errdefs.Error{
			Class: errdefs.ErrDenied,
			Msg:   fmt.Sprintf("%q changed while it was being written (a directory in it is now a symlink that leads elsewhere); nothing was changed", loc.Given),
			Rule:  "workspace",
			Cause: err,
		}
	}
	return workspace.MapError(loc.Given, err)
}
