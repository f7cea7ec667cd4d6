package fileops

import (
	"fmt"
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
)

// Git directories.
//
// The file tools never change a git directory: a repository's config
// (core.fsmonitor, aliases, filters, a pager), its hooks, its index (a
// gitlink that makes a nested repository a submodule) and a .git file's
// "gitdir:" line name programs that a person's own git runs later, outside
// any sandbox. Policy judges the paths a call names (builtin:git-internals
// asks, a gitdir target is refused at use); this is the check on the
// objects the operation actually opens, whatever path led there — a
// symlink, "..", a directory renamed in between: every directory opened on
// the way from the root to the entry's parent (one component at a time,
// never following a symlink, see openDirAt) is looked at before anything
// is created in it, and a change is refused when one of them is named .git
// or is a directory git would use as a repository (git's own test: a HEAD
// file and objects and refs directories, or a HEAD and a commondir file —
// a bare repository, the target of a .git file, a worktree's git
// directory), and when the entry itself is named .git (a .git file would
// point git elsewhere). There is no approval for it: the version-control
// tool (git_commit, git_branch) changes repositories with git, and a person
// changes a repository's config with their own git.
//
// .gitattributes, .gitignore and .gitmodules are ordinary files of the
// work tree and stay writable: an attribute names a filter or diff driver
// that only the repository's config (refused here) or the person's own
// configuration defines, and git ignores a .gitmodules "update = !command"
// (only .git/config may set one).

// errGitDir is the cause of a change refused in a git directory.
type errGitDir struct {
	at     string // the directory, relative to the root
	reason string
}

func (e *errGitDir) Error() string { return fmt.Sprintf("%s %s", e.at, e.reason) }

// isDotGit reports whether name is .git in any case (git refuses .GIT on
// case-insensitive file systems too).
func isDotGit(name string) bool { return strings.EqualFold(name, ".git") }

// gitDirCheck refuses a change below the directory open as fd, reached as
// at (relative to the root; "." for the root), when it is a git directory.
func gitDirCheck(fd int, at string) error {
	if i := strings.LastIndexByte(at, '/'); isDotGit(at[i+1:]) {
		return &errGitDir{at: at, reason: "is a git directory (.git)"}
	}
	kind := func(name string) uint32 {
		var st unix.Stat_t
		for {
			err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return 0
			}
			return st.Mode & unix.S_IFMT
		}
	}
	if kind("HEAD") != unix.S_IFREG {
		return nil
	}
	if kind("objects") == unix.S_IFDIR && kind("refs") == unix.S_IFDIR || kind("commondir") == unix.S_IFREG {
		return &errGitDir{at: at, reason: "is a directory git uses as a repository (it has HEAD and objects and refs, or a commondir)"}
	}
	return nil
}

// refuseGitEntry refuses, before anything is opened or created, a change
// of the entry name in the directory reached as dir (relative to the root)
// when the entry or a directory on the way is named .git.
func refuseGitEntry(dir, name string) error {
	at := ""
	for _, c := range strings.Split(dir, "/") {
		if c == "" || c == "." {
			continue
		}
		at = strings.TrimPrefix(at+"/"+c, "/")
		if isDotGit(c) {
			return &errGitDir{at: at, reason: "is a git directory (.git)"}
		}
	}
	if !isDotGit(name) {
		return nil
	}
	at = strings.TrimPrefix(at+"/"+name, "/")
	return &errGitDir{at: at, reason: "is a repository's .git (a .git file's gitdir: line points git elsewhere)"}
}

// gitDirError is the error for the model of a change of loc refused by
// gitDirCheck, refuseGitEntry or a namedSet (gitnamed.go).
func gitDirError(given string, g *errGitDir) error {
	return &errdefs.Error{
		Class: errdefs.ErrDenied,
		Msg: fmt.Sprintf("%q is inside a git directory or a path git runs: %v; the file tools do not change git directories "+
			"nor what a repository's git runs from the work tree (a person's git would run what is written there: config, hooks, "+
			"the index, a submodule's .git, a hooks directory or filter script its configuration names); nothing was changed. "+
			"Commit, stage and switch branches with the version-control tool (build_and_version_control: git_commit, git_branch)", given, g),
		Rule:  "builtin:git-internals",
		Cause: &fs.PathError{Op: "open", Path: given, Err: g},
	}
}
