// Package workspace confines file access to one directory tree.
//
// A Workspace holds an os.Root opened on the workspace directory. Every file
// operation goes through the root, so neither "..", absolute paths nor
// symlinks (including ones swapped in after a check) can make an operation
// touch anything outside: the kernel resolves each component relative to a
// directory descriptor inside the tree.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/toold/toold/pkg/errdefs"
)

// Workspace is an open workspace directory. It is safe for concurrent use.
type Workspace struct {
	dir     string // absolute, symlinks resolved
	given   string // absolute, as configured (may contain symlinks)
	root    *os.Root
	rootFS  fs.FS
	dirFD   int // the workspace directory, open for *at calls
	closeFn func() error
}

// Open opens dir as a workspace. The caller closes it.
func Open(dir string) (*Workspace, error) {
	given, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(given)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	fd, err := syscall.Open(real, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	closeFn := func() error {
		syscall.Close(fd)
		return root.Close()
	}
	return &Workspace{dir: real, given: given, root: root, rootFS: root.FS(), dirFD: fd, closeFn: closeFn}, nil
}

// DirFD returns a descriptor of the workspace directory, for *at system
// calls that resolve paths below it one component at a time without
// following symlinks (as the tree walks do). It stays valid until Close;
// callers must not close it.
func (w *Workspace) DirFD() int { return w.dirFD }

// Dir returns the workspace's absolute directory, symlinks resolved.
func (w *Workspace) Dir() string { return w.dir }

// Root returns the os.Root of the workspace. All access goes through it.
func (w *Workspace) Root() *os.Root { return w.root }

// FS returns the workspace as an fs.FS confined by the root.
func (w *Workspace) FS() fs.FS { return w.rootFS }

// Close releases the root.
func (w *Workspace) Close() error { return w.closeFn() }

// Rel turns a path from a model (relative to the workspace, or absolute)
// into a clean slash-separated path relative to the workspace root: "." for
// the root itself. A path that leaves the workspace lexically is refused with
// an ErrDenied error. Symlinks are not resolved here; the root refuses to
// follow one out of the tree when the path is used (see MapError).
func (w *Workspace) Rel(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", errdefs.Invalid("", "path", "path %q contains a NUL byte", p)
	}
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		for _, base := range []string{w.dir, w.given} {
			if c == base {
				return ".", nil
			}
			if strings.HasPrefix(c, base+string(filepath.Separator)) {
				return filepath.ToSlash(c[len(base)+1:]), nil
			}
		}
		return "", outside(p)
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", outside(p)
	}
	return c, nil
}

// Abs returns the absolute path of a workspace-relative path.
func (w *Workspace) Abs(rel string) string {
	return filepath.Join(w.dir, filepath.FromSlash(rel))
}

func outside(p string) error {
	return &errdefs.Error{
		Class: errdefs.ErrDenied,
		Msg:   fmt.Sprintf("path %q is outside the workspace; use a path inside the workspace (relative paths are resolved from the workspace root)", p),
		Rule:  "workspace",
	}
}

// IsEscape reports whether err is the root refusing a path that resolves
// outside the tree (through ".." after a symlink, or a symlink pointing out).
func IsEscape(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// MapError turns an error from a file operation on p into an error the model
// can act on: not found, not a directory, permission, outside the workspace.
// Errors it does not know are returned as ErrFailed with their text.
func MapError(p string, err error) error {
	if err == nil {
		return nil
	}
	var de *errdefs.Error
	if errors.As(err, &de) {
		return err
	}
	switch {
	case IsEscape(err):
		return &errdefs.Error{
			Class: errdefs.ErrDenied,
			Msg:   fmt.Sprintf("path %q resolves outside the workspace (through a symlink); use a path inside the workspace", p),
			Rule:  "workspace",
			Cause: err,
		}
	case errors.Is(err, fs.ErrNotExist):
		return errdefs.Wrap(errdefs.ErrFailed, err, "%q does not exist; check the path (list_dir or glob can find it)", p)
	case errors.Is(err, syscall.ENOTDIR):
		return errdefs.Wrap(errdefs.ErrFailed, err, "a component of %q is not a directory", p)
	case errors.Is(err, syscall.EISDIR):
		return errdefs.Wrap(errdefs.ErrFailed, err, "%q is a directory, not a file; use list_dir to see what it contains", p)
	case errors.Is(err, fs.ErrPermission):
		return errdefs.Wrap(errdefs.ErrFailed, err, "permission denied for %q", p)
	case errors.Is(err, syscall.ELOOP):
		return errdefs.Wrap(errdefs.ErrFailed, err, "%q has too many levels of symbolic links", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return errdefs.Wrap(errdefs.ErrFailed, err, "%s %q: %v", pe.Op, p, pe.Err)
	}
	return errdefs.Wrap(errdefs.ErrFailed, err, "%q: %v", p, err)
}
