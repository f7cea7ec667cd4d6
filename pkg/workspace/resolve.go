package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/toold/toold/pkg/errdefs"
)

// maxSymlinks bounds symlink resolution, as the kernel does (40 on Linux).
const maxSymlinks = 40

// Location is where a path resolves, as the kernel would resolve it.
type Location struct {
	// Given is the path as the model gave it.
	Given string
	// Abs is the absolute path with every existing symlink resolved and
	// each ".." applied to what the components before it resolved to, as
	// open(2) does. Components that do not exist yet (a file to create) are
	// appended as written.
	Abs string
	// Inside reports whether Abs is the workspace directory or below it.
	Inside bool
	// Rel is Abs relative to the workspace (slash-separated, "." for the
	// root) when Inside; empty otherwise.
	Rel string
	// Exists reports whether Abs exists.
	Exists bool
	// Type is the file type of Abs (its syscall.S_IFMT bits) as Resolve
	// lstat'ed it — never a symlink, since Resolve follows them; 0 when
	// Abs does not exist or the Location was not made by Resolve. What is
	// at Abs may have changed since: a caller that opens Abs checks the
	// type of what it opened too.
	Type uint32
}

// Resolve resolves a path from a model (relative to the workspace, or
// absolute) the way the kernel will: symlinks are followed, including one in
// the last component, and ".." after a symlink goes to the parent of the
// symlink's target, not of the link. It does no access check; use Inside to
// decide, and RootFor to operate on the result without following anything
// that changed since.
func (w *Workspace) Resolve(p string) (Location, error) {
	loc := Location{Given: p}
	if strings.IndexByte(p, 0) >= 0 {
		return loc, errdefs.Invalid("", "path", "path %q contains a NUL byte", p)
	}
	if p == "" {
		p = "."
	}
	start := w.dir
	if filepath.IsAbs(p) {
		start = "/"
		// A path given through the configured (unresolved) workspace
		// directory means the workspace.
		if rel, ok := cutDir(filepath.Clean(p), w.given); ok {
			start, p = w.dir, rel
		}
	}
	abs, typ, err := resolve(start, p)
	if err != nil {
		return loc, errdefs.Wrap(errdefs.ErrFailed, err, "cannot resolve %q: %v", loc.Given, err)
	}
	loc.Abs, loc.Exists, loc.Type = abs, typ != 0, typ
	if rel, ok := cutDir(abs, w.dir); ok {
		loc.Inside, loc.Rel = true, filepath.ToSlash(rel)
	}
	return loc, nil
}

// Lexical returns where p, a path from a model (relative to the workspace,
// or absolute), names without resolving anything: p made absolute from the
// workspace directory and cleaned, with Inside and Rel set as Resolve sets
// them. That is where Resolve finds p when no component of p is a symlink.
// It makes no system call and says nothing of whether p exists (Exists is
// false, Type 0); ok is false for an empty path, one with a NUL byte and
// one with a ".." component (which the kernel applies after symlinks, not
// lexically: HasDotDot).
func (w *Workspace) Lexical(p string) (loc Location, ok bool) {
	loc.Given = p
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return loc, false
	}
	if HasDotDot(p) {
		return loc, false
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = w.dir + "/" + abs
	}
	loc.Abs = filepath.Clean(abs)
	if rel, in := cutDir(loc.Abs, w.dir); in {
		loc.Inside, loc.Rel = true, filepath.ToSlash(rel)
	}
	return loc, true
}

// HasDotDot reports whether the slash-separated path p has a ".."
// component.
func HasDotDot(p string) bool {
	for p != "" {
		var c string
		c, p, _ = strings.Cut(p, "/")
		if c == ".." {
			return true
		}
	}
	return false
}

// cutDir returns path relative to dir when path is dir or below it.
func cutDir(path, dir string) (string, bool) {
	if path == dir {
		return ".", true
	}
	if dir == "/" {
		return strings.TrimPrefix(path, "/"), true
	}
	if strings.HasPrefix(path, dir+"/") {
		return path[len(dir)+1:], true
	}
	return "", false
}

// resolve walks p component by component from the absolute directory start.
// It returns the resolved path and, when it exists, its type (S_IFMT bits;
// 0 when it does not exist).
func resolve(start, p string) (string, uint32, error) {
	cur := start                   // resolved, absolute, existing
	typ := uint32(syscall.S_IFDIR) // cur's type
	todo := splitPath(p)
	links := 0
	for i := 0; i < len(todo); i++ {
		c := todo[i]
		switch c {
		case "", ".":
			continue
		case "..":
			cur, typ = filepath.Dir(cur), syscall.S_IFDIR
			continue
		}
		next := cur + "/" + c // cur is clean and absolute, c one name
		if cur == "/" {
			next = "/" + c
		}
		mode, err := lstatMode(next)
		if errors.Is(err, fs.ErrNotExist) {
			// The rest does not exist: append it lexically. A ".." after a
			// missing component would fail in the kernel (ENOENT); Clean
			// gives the path it would name once the component exists.
			rest := filepath.Join(append([]string{next}, todo[i+1:]...)...)
			return filepath.Clean(rest), 0, nil
		}
		if err != nil {
			if errors.Is(err, syscall.ENOTDIR) {
				return "", 0, fmt.Errorf("%s is not a directory", cur)
			}
			return "", 0, err
		}
		if mode&syscall.S_IFMT != syscall.S_IFLNK {
			cur, typ = next, mode&syscall.S_IFMT
			continue
		}
		if links++; links > maxSymlinks {
			return "", 0, fmt.Errorf("%w (a loop of symbolic links?)", syscall.ELOOP)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", 0, err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(splitPath(target), todo[i+1:]...)
		i = -1
	}
	return cur, typ, nil
}

// lstatMode returns the type and mode bits of p, not following a final
// symlink: os.Lstat without the FileInfo it allocates.
func lstatMode(p string) (uint32, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(p, &st)
		switch err {
		case nil:
			return st.Mode, nil
		case syscall.EINTR:
			continue
		}
		return 0, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// RootFor opens what an operation on loc goes through: for a location inside
// the workspace, the workspace root and loc.Rel; for one outside, a root on
// the parent directory of loc.Abs and its base name. The outside root is
// checked to be the directory Resolve saw: if a component was swapped for a
// symlink since, RootFor fails instead of following it. Operations through
// the returned root never follow a symlink out of it. The caller calls close
// when done.
func (w *Workspace) RootFor(loc Location) (root *os.Root, name string, close func() error, err error) {
	if loc.Inside {
		return w.root, loc.Rel, func() error { return nil }, nil
	}
	if loc.Abs == "" || !filepath.IsAbs(loc.Abs) {
		return nil, "", nil, errdefs.New(errdefs.ErrInternal, "RootFor needs a resolved location")
	}
	dir, base := filepath.Dir(loc.Abs), filepath.Base(loc.Abs)
	if loc.Abs == "/" {
		dir, base = "/", "."
	}
	// Open the parent without following symlinks in any component, so the
	// directory is the one Resolve found (which had none).
	fd, err := openDirNoFollow(dir)
	if err != nil {
		return nil, "", nil, MapError(loc.Given, fmt.Errorf("%s changed since it was checked: %w", dir, err))
	}
	defer syscall.Close(fd)
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", nil, MapError(loc.Given, err)
	}
	var want, got syscall.Stat_t
	if err := syscall.Fstat(fd, &want); err != nil {
		r.Close()
		return nil, "", nil, MapError(loc.Given, err)
	}
	fi, err := r.Stat(".")
	if err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			got = *st
		}
	}
	if err != nil || got.Dev != want.Dev || got.Ino != want.Ino {
		r.Close()
		return nil, "", nil, errdefs.New(errdefs.ErrDenied, "%s changed while it was being opened; nothing was done", dir)
	}
	return r, base, r.Close, nil
}

// openDirNoFollow opens an absolute directory path component by component
// with O_NOFOLLOW, failing on any symlink.
func openDirNoFollow(dir string) (int, error) {
	fd, err := syscall.Open("/", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range splitPath(strings.TrimPrefix(dir, "/")) {
		if c == "" {
			continue
		}
		next, err := syscall.Openat(fd, c, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		syscall.Close(fd)
		if err != nil {
			if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
				return -1, fmt.Errorf("%s is not a plain directory (a symlink?)", c)
			}
			return -1, err
		}
		fd = next
	}
	return fd, nil
}
