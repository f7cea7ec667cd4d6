package fileops

import (
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// What a person's git runs from the work tree.
//
// Beside the git directories (gitdir.go), a person's git, outside any
// sandbox, runs what a repository's configuration names in the work tree
// (core.hooksPath=.husky, a clean filter's scripts/clean.sh,
// core.fsmonitor…) and runs git in every submodule, wherever its .git is
// (below node_modules/ too). The terminal manager finds these paths for
// the sandbox's read-only binds (tools.GitNamed); the file tools refuse to
// change them by the objects actually opened: each directory opened on
// the way to an entry, and the entry itself, is compared by device and
// inode with the set's paths (a directory in the set refuses everything
// below it), and an entry not there yet by its parent directory's
// identity and its name (asked again once the directories on the way
// were made) — never by the strings of a path, so a symlink,
// "..", a hard link or a directory renamed in between lead to the same
// answer.

// fileKey is a file's identity.
type fileKey struct{ dev, ino uint64 }

// entryKey is an entry's parent directory and name.
type entryKey struct {
	dir  fileKey
	name string
}

// namedSet is the identities of the GitNamed paths when a change starts.
type namedSet struct {
	files   map[fileKey]string  // existing paths (followed), by identity
	entries map[entryKey]string // every path, by parent and name
	holders map[fileKey]string  // directories holding a path, by identity
}

// gitNamedSet returns the identities of f.gitNamed's paths now; nil when
// there is none.
func (f *FileOperations) gitNamedSet() *namedSet {
	if f.gitNamed == nil {
		return nil
	}
	paths := f.gitNamed.GitNamedPaths()
	if len(paths) == 0 {
		return nil
	}
	s := &namedSet{files: map[fileKey]string{}, entries: map[entryKey]string{}, holders: map[fileKey]string{}}
	top := f.ws.Dir()
	for _, p := range paths {
		var st unix.Stat_t
		if statRetry(p, &st, 0) == nil {
			s.files[fileKey{uint64(st.Dev), st.Ino}] = p
		}
		if statRetry(p, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			s.files[fileKey{uint64(st.Dev), st.Ino}] = p
		}
		// The entry by its parent and name (when the parent is not there,
		// openPlace asks again once it made the way).
		if statRetry(filepath.Dir(p), &st, 0) == nil {
			s.entries[entryKey{fileKey{uint64(st.Dev), st.Ino}, filepath.Base(p)}] = p
		}
		// The directories holding it, below the workspace's: deleting or
		// renaming one would take the path with it.
		for d := filepath.Dir(p); d != top && d != "/" && d != "." && strings.HasPrefix(d, top+"/"); d = filepath.Dir(d) {
			if statRetry(d, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				s.holders[fileKey{uint64(st.Dev), st.Ino}] = p
			}
		}
	}
	return s
}

func statRetry(p string, st *unix.Stat_t, flags int) error {
	for {
		err := unix.Fstatat(unix.AT_FDCWD, p, st, flags)
		if err != unix.EINTR {
			return err
		}
	}
}

func fstatRetry(fd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(fd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// dirCheck returns the check of the directories opened on the way to an
// entry (openDirAt): it refuses a change below a directory that is one of
// the set's paths or, by its parent's identity and its name, stands where
// one is (made on the way to a missing path).
func (s *namedSet) dirCheck() func(fd int, at string) error {
	var prev fileKey
	first := true
	return func(fd int, at string) error {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			return nil
		}
		k := fileKey{uint64(st.Dev), st.Ino}
		_, ok := s.files[k]
		if !ok && !first {
			_, ok = s.entries[entryKey{prev, path.Base(at)}]
		}
		prev, first = k, false
		if ok {
			return &errGitDir{at: at, reason: "is a path a repository's git runs or reads (a submodule's git directory, a hooks directory or a program its configuration names)"}
		}
		return nil
	}
}

// checkEntry refuses a change of the entry name in the directory open as
// fd (the entry reached as at) when it is one of the set's paths, by its
// identity when it exists and by its parent and name either way.
func (s *namedSet) checkEntry(fd int, at, name string) error {
	var dir, st unix.Stat_t
	if unix.Fstat(fd, &dir) != nil {
		return nil
	}
	_, ok := s.entries[entryKey{fileKey{uint64(dir.Dev), dir.Ino}, name}]
	if !ok && fstatRetry(fd, name, &st) == nil {
		k := fileKey{uint64(st.Dev), st.Ino}
		_, ok = s.files[k]
		if _, holds := s.holders[k]; holds && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			ok = true
		}
	}
	if ok {
		return &errGitDir{at: at, reason: "is a path a repository's git runs or reads (a submodule's .git, a hooks directory or a program its configuration names)"}
	}
	return nil
}
