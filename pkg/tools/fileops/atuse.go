package fileops

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// Checked at use.
//
// Policy decides a call on its paths as they resolved when it was decided;
// the operation resolves them again when it runs, and what it finds may
// have changed since (a file swapped for a symlink to .env while an
// approval waited). So every operation asks Options.Guard (the policy
// engine) again, on what it will actually touch:
//
//   - after resolving a path, before opening anything: the resolved path
//     and the path as named must not be sensitive, denied, or guarded by an
//     ask rule the decision did not see (tools.UseChecker.CheckUse);
//   - the path is then opened one component at a time relative to an open
//     directory, never following a symlink (one that appeared since the
//     check is refused), so what is opened is the path that was checked;
//   - after opening a file to read it: the kernel's name for the open file
//     (/proc/self/fd) must still be the checked path, and a regular file
//     with more than one hard link must not be a sensitive file under
//     another name (tools.UseChecker.CheckOpened, by device and inode).
//
// Writes put their temporary file in the open parent directory and rename
// it onto the checked name in that directory: rename(2) replaces whatever
// is at the name, a symlink included, and never follows it.

// readOps are the operations that only read.
var readOps = map[string]bool{
	"read_file": true, "list_dir": true, "glob": true, "grep_search": true, "read_many_files": true,
}

// use is what the guard is asked about loc, the path given resolved now,
// for call.
func (f *FileOperations) use(call *tools.Call, given string, loc workspace.Location) *tools.Use {
	if f.parent != nil {
		call = f.parent
	}
	u := &tools.Use{Tool: call.Tool, Operation: call.Operation, Args: call.Args, Given: given, Abs: loc.Abs, Write: !readOps[call.Operation] && !isEditorView(call)}
	if f.undecided {
		u.Given = ""
	}
	return u
}

// checkUse asks the guard whether u may happen now.
func (f *FileOperations) checkUse(u *tools.Use) error {
	if u == nil {
		return nil
	}
	if f.guard == nil {
		// Without a guard, a path no decision saw (a file a pattern of
		// read_many_files matched) is at least held to Options.Sensitive.
		if f.sensitive != nil && u.Given == "" && f.sensitive(u.Abs) {
			return &errdefs.Error{
				Class: errdefs.ErrDenied,
				Msg:   fmt.Sprintf("%s is a sensitive path; nothing was read", u.Abs),
				Rule:  "builtin:sensitive-path",
			}
		}
		return nil
	}
	return f.guard.CheckUse(u)
}

// checkOpened asks the guard about the file u opened, with status st.
func (f *FileOperations) checkOpened(u *tools.Use, st *unix.Stat_t) error {
	if f.guard == nil || u == nil {
		return nil
	}
	return f.guard.CheckOpened(u, openedOf(st))
}

// openedOf is the status the guard looks at.
func openedOf(st *unix.Stat_t) tools.Opened {
	return tools.Opened{
		Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink),
		Regular: st.Mode&unix.S_IFMT == unix.S_IFREG,
		Ctime:   time.Unix(st.Ctim.Sec, st.Ctim.Nsec),
	}
}

// fdPath returns the kernel's current name of the open descriptor fd; ok is
// false where /proc is not mounted or the descriptor has no path name.
func fdPath(fd int) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || len(p) == 0 || p[0] != '/' {
		return "", false
	}
	return p, true
}

// openedAt reports whether the open descriptor fd is still named abs. It
// is true where the kernel cannot tell (no /proc). It is fdPath without
// its allocations.
func openedAt(fd int, abs string) bool {
	var buf [512]byte
	var n int
	var err error
	for {
		n, err = unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err != nil || n == 0 || buf[0] != '/':
		return true
	case n == len(buf): // perhaps cut: ask again with room for any length
		p, ok := fdPath(fd)
		return !ok || p == abs
	}
	return string(buf[:n]) == abs
}
