package fileops

import (
	"errors"
	"fmt"
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
// allowed it for this call (tools.Call.OutsideAllowed). Then the operation
// opens the entry's parent directory through a root (workspace.RootFor: the
// workspace's os.Root inside, a root verified against the check outside) and
// works on the entry with *at system calls relative to that open directory,
// by a single name, never following a symlink in it. Whatever is swapped in
// after the check, nothing outside the root is touched: the root refuses to
// leave its tree, and the final name is never followed.
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
	loc, err := f.resolvePath(field, p, follow)
	if err != nil {
		return loc, err
	}
	if !loc.Inside && !call.OutsideAllowed(loc.Abs) {
		return loc, &errdefs.Error{
			Class: errdefs.ErrDenied,
			Msg: fmt.Sprintf("path %q is outside the workspace (it resolves to %s) and policy did not allow it for this call; "+
				"use a path inside the workspace (relative paths are resolved from the workspace root)", p, loc.Abs),
			Field: "/" + field,
			Rule:  "workspace",
		}
	}
	return loc, nil
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
	closeFn  func() error
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
	p.dir, p.madeDirs, err = openDirAt(root, strings.TrimSuffix(dir, "/"), mkdirs)
	if err != nil {
		p.close()
		return nil, mapErr(loc, err)
	}
	p.fd = int(p.dir.Fd())
	if !loc.Inside {
		for i, d := range p.madeDirs {
			p.madeDirs[i] = filepath.Join(root.Name(), d)
		}
	}
	return p, nil
}

// openDirAt opens the directory dir ("" or "." for the root itself) through
// root. With mkdirs it creates the missing components one at a time: each
// is made with mkdirat(2) in its parent and opened with O_NOFOLLOW, so a
// symlink swapped in meanwhile is refused, not followed. It returns the
// created directories, relative to root.
func openDirAt(root *os.Root, dir string, mkdirs bool) (*os.File, []string, error) {
	if dir == "" {
		dir = "."
	}
	d, err := root.Open(dir)
	if err == nil {
		if fi, err := d.Stat(); err != nil || !fi.IsDir() {
			d.Close()
			return nil, nil, &fs.PathError{Op: "open", Path: dir, Err: unix.ENOTDIR}
		}
		return d, nil, nil
	}
	if !mkdirs || !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	// Find the deepest existing ancestor.
	comps := strings.Split(dir, "/")
	i := len(comps) - 1
	for ; i > 0; i-- {
		d, err = root.Open(path.Join(comps[:i]...))
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
	}
	if i == 0 {
		if d, err = root.Open("."); err != nil {
			return nil, nil, err
		}
	}
	var made []string
	for ; i < len(comps); i++ {
		c := comps[i]
		fd := int(d.Fd())
		err := unix.Mkdirat(fd, c, 0o755)
		if err == nil {
			made = append(made, path.Join(comps[:i+1]...))
		} else if err != unix.EEXIST {
			d.Close()
			return nil, nil, &fs.PathError{Op: "mkdir", Path: path.Join(comps[:i+1]...), Err: err}
		}
		nfd, err := openAt(fd, c, unix.O_DIRECTORY)
		d.Close()
		if err != nil {
			if err == unix.ELOOP {
				err = errSwapped
			}
			return nil, nil, &fs.PathError{Op: "open", Path: path.Join(comps[:i+1]...), Err: err}
		}
		d = os.NewFile(uintptr(nfd), path.Join(comps[:i+1]...))
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
	if errors.Is(err, errSwapped) {
		return &errdefs.Error{
			Class: errdefs.ErrDenied,
			Msg:   fmt.Sprintf("%q changed while it was being written: %v", loc.Given, errSwapped),
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
