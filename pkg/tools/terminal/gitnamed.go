package terminal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// What a person's git, outside any sandbox, runs from the workspace beside
// what a git directory holds (the walk's read-only git directories,
// hiddenCache.get), found from each repository's own records and made
// read-only in a command's view like the git directories themselves:
//
//   - its submodules: every gitlink (mode 160000) of a repository's index
//     is a directory where the person's git status runs git, wherever it
//     is — below vendor/ or node_modules/, which the walk does not enter.
//     Its .git (directory, or file with the git directory it names) is
//     read-only, and the submodules' own indexes are read in turn. A
//     gitlink whose directory has no .git (not populated) has that
//     directory read-only, so no command populates it with a repository of
//     its own.
//   - what its configuration names as a program or a hooks directory
//     (gitConfigPrograms), and the configuration files it includes, when
//     they are in a writable directory: a command rewriting a hook of
//     core.hooksPath=.husky or a filter's script would have the person's
//     next git status, add or commit run it.
//
// Both are cached per repository by the identity (device, inode, size,
// modification time) of the files they were read from — the index; the
// configuration files git read, with the ones it would read were they
// there, and HEAD (includeIf onbranch:) — so a command start costs a few
// stats while nothing changed.
type gitNamedCache struct {
	mu    sync.Mutex
	git   string // the git program, "" when there is none
	found bool   // git was looked for
	repos map[string]*namedRepo
	// last is the answer of the last get, for lastGits and lastWritable;
	// it stands while every file of checks is as it was.
	last                   []string
	lastGits, lastWritable []string
	checks                 []fileStamp
	valid                  bool
}

// namedRepo is what one repository (by its git directory) names.
type namedRepo struct {
	index    fileStamp
	links    []string // gitlink paths, relative to the work tree
	cfg      []fileStamp
	programs []string // absolute paths the configuration names
	hooks    []string // absolute hooks directories it names
	includes []string // absolute configuration files it read
	hashLen  int
}

// fileStamp is the identity of a file when it was read; a file that was
// not there has ok false.
type fileStamp struct {
	path            string
	ok              bool
	dev, ino, size  uint64
	mtimeS, mtimeNS int64
}

func stampOf(path string) fileStamp {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return fileStamp{path: path}
	}
	return fileStamp{path: path, ok: true, dev: uint64(st.Dev), ino: st.Ino, size: uint64(st.Size), mtimeS: st.Mtim.Sec, mtimeNS: st.Mtim.Nsec}
}

func (s fileStamp) same() bool { return stampOf(s.path) == s }

// gitNamedLimit bounds the repositories one command start looks at.
const gitNamedLimit = 512

// get returns the paths to make read-only, beside gits (the git
// directories of the walk), for the workspace dir whose writable
// directories are writable: the submodules' git directories and .git
// files and what the repositories' configuration names (see
// gitNamedCache). Paths already below a read-only git directory are left
// out.
func (c *gitNamedCache) get(dir string, gits, writable []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid && slices.Equal(gits, c.lastGits) && slices.Equal(writable, c.lastWritable) &&
		!slices.ContainsFunc(c.checks, func(s fileStamp) bool { return !s.same() }) {
		return c.last
	}
	if !c.found {
		c.git, _ = exec.LookPath("git")
		c.found = true
	}
	checked := map[string]bool{}
	c.checks = c.checks[:0]
	check := func(ss ...fileStamp) {
		for _, s := range ss {
			if !checked[s.path] {
				checked[s.path] = true
				c.checks = append(c.checks, s)
			}
		}
	}
	type repo struct{ work, gitDir string }
	var queue []repo
	seen := map[string]bool{}
	push := func(work, gitDir string) {
		if gitDir != "" && !seen[gitDir] && len(seen) < gitNamedLimit {
			seen[gitDir] = true
			queue = append(queue, repo{work, gitDir})
		}
	}
	// The repository holding the workspace (dir itself, or above it: its
	// submodules and configuration may name paths inside), and every
	// repository the walk found.
	check(stampOf(filepath.Join(dir, ".git")))
	for d := dir; ; d = filepath.Dir(d) {
		if g := dotGitDir(filepath.Join(d, ".git")); g != "" {
			check(stampOf(filepath.Join(d, ".git")))
			push(d, g)
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, g := range gits {
		if filepath.Base(g) == ".git" {
			push(filepath.Dir(g), dotGitDir(g))
		}
	}
	var out []string
	add := func(p string) {
		if p == "" || !inside(p, writable) || slices.Contains(out, p) {
			return
		}
		// Never a writable directory itself or one holding it (hooksPath=.).
		for _, w := range writable {
			if p == w || strings.HasPrefix(w, p+"/") {
				return
			}
		}
		out = append(out, p)
	}
	for i := 0; i < len(queue); i++ {
		r := queue[i]
		n := c.repo(r.gitDir, r.work)
		check(n.cfg...)
		check(n.index)
		for _, l := range n.links {
			sub := filepath.Join(r.work, l)
			if !inside(sub, writable) {
				continue
			}
			dg := filepath.Join(sub, ".git")
			check(stampOf(dg), stampOf(sub))
			fi, err := os.Lstat(dg)
			switch {
			case err != nil:
				// Not populated: nothing may populate it.
				if fi, err := os.Lstat(sub); err == nil && fi.IsDir() {
					add(sub)
				}
			case fi.IsDir():
				add(dg)
				push(sub, dg)
			case fi.Mode().IsRegular():
				add(dg)
				for _, g := range gitFileDirs(dg, writable) {
					add(g)
				}
				push(sub, dotGitDir(dg))
			case fi.Mode()&os.ModeSymlink != 0:
				if g := resolveIn(sub, dg); g != "" {
					add(g)
					push(sub, g)
				}
			}
		}
		for _, p := range slices.Concat(n.programs, n.hooks, n.includes) {
			add(p)
		}
	}
	for g := range c.repos {
		if !seen[g] {
			delete(c.repos, g)
		}
	}
	out = slices.DeleteFunc(out, func(p string) bool { return inside(p, gits) })
	c.last, c.lastGits, c.lastWritable, c.valid = out, slices.Clone(gits), slices.Clone(writable), true
	return out
}

// lastPaths returns the paths of the last get, without looking.
func (c *gitNamedCache) lastPaths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// dotGitDir returns the git directory a .git names: itself when it is a
// directory, the directory a .git file names, where a link points; ""
// when there is none.
func dotGitDir(dotGit string) string {
	fi, err := os.Lstat(dotGit)
	switch {
	case err != nil:
		return ""
	case fi.Mode().IsRegular():
		gd := readPathFile(dotGit, "gitdir: ")
		if gd == "" {
			return ""
		}
		return resolveIn(filepath.Dir(dotGit), gd)
	default:
		return resolveIn(filepath.Dir(dotGit), dotGit)
	}
}

// repo returns what the repository gitDir (work tree work) names, read
// again when a file it was read from changed. Called with c.mu held.
func (c *gitNamedCache) repo(gitDir, work string) *namedRepo {
	if c.repos == nil {
		c.repos = map[string]*namedRepo{}
	}
	n := c.repos[gitDir]
	if n == nil || slices.ContainsFunc(n.cfg, func(s fileStamp) bool { return !s.same() }) {
		n = &namedRepo{hashLen: 20}
		n.cfg, n.programs, n.hooks, n.includes, n.hashLen = c.readConfig(gitDir, work)
		c.repos[gitDir] = n
	}
	if !n.index.same() || n.index.path == "" {
		idx := filepath.Join(gitDir, "index")
		n.index = stampOf(idx)
		n.links = nil
		if n.index.ok {
			data, err := os.ReadFile(idx)
			if err == nil {
				n.links, err = indexGitlinks(data, n.hashLen)
			}
			if errors.Is(err, errSplitIndex) {
				n.links = c.lsGitlinks(gitDir, work)
			}
		}
	}
	return n
}

// errSplitIndex: the index is split (core.splitIndex); git reads it.
var errSplitIndex = errors.New("split index")

// indexGitlinks returns the paths of the gitlinks (mode 160000) of a git
// index (versions 2 to 4; hashLen 20 for SHA-1, 32 for SHA-256), at any
// stage. A split index is errSplitIndex: its entries are in a shared
// index, by position. Written here rather than run git ls-files on every
// change: a command start reads it in microseconds, without a process.
func indexGitlinks(data []byte, hashLen int) ([]string, error) {
	bad := errors.New("git index: malformed")
	if len(data) < 12+hashLen || string(data[:4]) != "DIRC" {
		return nil, bad
	}
	version := binary.BigEndian.Uint32(data[4:])
	count := binary.BigEndian.Uint32(data[8:])
	if version < 2 || version > 4 {
		return nil, errors.New("git index: unknown version")
	}
	end := len(data) - hashLen
	off := 12
	var links []string
	var prev []byte
	for range count {
		fixed := 40 + hashLen + 2
		if off+fixed > end {
			return nil, bad
		}
		mode := binary.BigEndian.Uint32(data[off+24:])
		flags := binary.BigEndian.Uint16(data[off+40+hashLen:])
		start := off + fixed
		if version >= 3 && flags&0x4000 != 0 {
			start += 2
		}
		var name []byte
		if version == 4 {
			strip, n := offsetVarint(data[start:end])
			if n <= 0 || strip > uint64(len(prev)) {
				return nil, bad
			}
			start += n
			nul := bytes.IndexByte(data[start:end], 0)
			if nul < 0 {
				return nil, bad
			}
			name = append(slices.Clip(prev[:len(prev)-int(strip)]), data[start:start+nul]...)
			off = start + nul + 1
		} else {
			nul := bytes.IndexByte(data[start:end], 0)
			if nul < 0 {
				return nil, bad
			}
			name = data[start : start+nul]
			// Entries are padded with 1 to 8 NULs to a multiple of 8.
			off += (start - off + nul + 8) &^ 7
		}
		prev = name
		if mode>>12 == 0o16 {
			links = append(links, string(name))
		}
	}
	// Extensions: a "link" one makes it a split index.
	for off+8 <= end {
		size := int(binary.BigEndian.Uint32(data[off+4:]))
		if string(data[off:off+4]) == "link" {
			return nil, errSplitIndex
		}
		if size < 0 || off+8+size > end {
			break
		}
		off += 8 + size
	}
	return links, nil
}

// offsetVarint decodes git's offset varint (index version 4), returning
// the value and the bytes read (0 when b ends first).
func offsetVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		c = b[i]
		i++
		v = (v+1)<<7 | uint64(c&127)
	}
	return v, i
}

// gitRunTimeout bounds a git run on a command's start path (a FIFO
// included as configuration would block it).
const gitRunTimeout = 3 * time.Second

// hostGit runs c.git with args for gitDir on the host and returns its
// standard output. It reads: git config and ls-files run nothing a
// configuration names. The environment is toold's without what would
// point git elsewhere or add configuration of toold's own process.
func (c *gitNamedCache) hostGit(gitDir, work string, args ...string) ([]byte, error) {
	if c.git == "" {
		return nil, errors.New("no git")
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.git, append([]string{"--git-dir=" + gitDir, "-c", "safe.directory=*", "-c", "core.fsmonitor=false"}, args...)...)
	cmd.Dir = work
	cmd.WaitDelay = time.Second
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return strings.HasPrefix(k, "GIT_") && k != "GIT_CONFIG_GLOBAL" && k != "GIT_CONFIG_SYSTEM" && k != "GIT_CONFIG_NOSYSTEM"
	})
	return cmd.Output()
}

// lsGitlinks lists a repository's gitlinks with git ls-files (a split
// index).
func (c *gitNamedCache) lsGitlinks(gitDir, work string) []string {
	out, err := c.hostGit(gitDir, work, "ls-files", "--stage", "-z")
	if err != nil {
		return nil
	}
	var links []string
	for rec := range strings.SplitSeq(string(out), "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if ok && strings.HasPrefix(meta, "160000 ") {
			links = append(links, path)
		}
	}
	return links
}

// readConfig reads the configuration git uses in the repository gitDir
// (system, global, the repository's, its worktree's, and every file
// they include — include and includeIf, by git's own rules: git config
// --list --show-origin) and returns the stamps to check it by, the
// programs and hooks directories it names (absolute, existing, relative
// ones resolved against the work tree, where git runs them), the files
// it read, and the index's hash length. A configuration git cannot read
// names nothing (the person's git refuses it too).
func (c *gitNamedCache) readConfig(gitDir, work string) (stamps []fileStamp, programs, hooks, files []string, hashLen int) {
	hashLen = 20
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	candidates := []string{filepath.Join(gitDir, "config"), filepath.Join(gitDir, "config.worktree"), filepath.Join(gitDir, "commondir"), filepath.Join(gitDir, "HEAD"), "/etc/gitconfig"}
	if cd := readPathFile(filepath.Join(gitDir, "commondir"), ""); cd != "" {
		if cd = resolveIn(gitDir, cd); cd != "" {
			candidates = append(candidates, filepath.Join(cd, "config"), filepath.Join(cd, "config.worktree"))
		}
	}
	if home != "" {
		candidates = append(candidates, filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config"))
	}
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"} {
		if v := os.Getenv(k); v != "" {
			candidates = append(candidates, v)
		}
	}
	out, err := c.hostGit(gitDir, work, "config", "--list", "--show-origin", "-z")
	seen := map[string]bool{}
	stamp := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			stamps = append(stamps, stampOf(p))
		}
	}
	for _, p := range candidates {
		stamp(p)
	}
	if err != nil {
		return stamps, nil, nil, nil, hashLen
	}
	recs := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(recs); i += 2 {
		origin, kv := recs[i], recs[i+1]
		file, isFile := strings.CutPrefix(origin, "file:")
		if !isFile {
			continue
		}
		if r := configPath(file, work, ""); r != "" {
			file = r
		} else if file = filepath.Clean(file); !filepath.IsAbs(file) {
			file = filepath.Join(work, file)
		}
		stamp(file)
		if !slices.Contains(files, file) {
			files = append(files, file)
		}
		key, value, _ := strings.Cut(kv, "\n")
		key = strings.ToLower(key)
		switch {
		case key == "extensions.objectformat" && strings.EqualFold(value, "sha256"):
			hashLen = 32
		case strings.HasPrefix(key, "include.") || strings.HasPrefix(key, "includeif."):
			// A file it would include, once there.
			if strings.HasSuffix(key, ".path") {
				stamp(configPath(value, filepath.Dir(file), home))
			}
		case key == "core.hookspath":
			if p := configPath(value, work, home); p != "" {
				if fi, err := os.Stat(p); err == nil && fi.IsDir() {
					hooks = append(hooks, p)
					// husky 9: hooksPath .husky/_, whose hooks run .husky/NAME.
					if filepath.Base(p) == "_" && filepath.Base(filepath.Dir(p)) == ".husky" {
						hooks = append(hooks, filepath.Dir(p))
					}
				}
			}
		case gitConfigProgram(key, value):
			for _, w := range commandWords(strings.TrimPrefix(value, "!")) {
				if p := configPath(w, work, home); p != "" {
					if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
						programs = append(programs, p)
					}
				}
			}
		}
	}
	return stamps, programs, hooks, files, hashLen
}

// gitConfigProgram reports whether a configuration key (lower case) names
// a program git runs: git's documented ones, and an alias or a
// submodule update starting with "!".
func gitConfigProgram(key, value string) bool {
	switch key {
	case "core.fsmonitor":
		switch strings.ToLower(value) {
		case "", "true", "false", "yes", "no", "on", "off", "1", "0":
			return false
		}
		return true
	case "core.sshcommand", "core.editor", "core.pager", "core.askpass", "core.gitproxy", "core.alternaterefscommand",
		"sequence.editor", "diff.external", "interactive.difffilter", "gpg.program", "credential.helper",
		"uploadpack.packobjectshook", "sendemail.smtpserver", "web.browser":
		return true
	}
	section, rest, _ := strings.Cut(key, ".")
	name := rest[strings.LastIndexByte(rest, '.')+1:]
	switch {
	case section == "alias", section == "submodule" && name == "update":
		return strings.HasPrefix(value, "!")
	case section == "pager":
		return true
	case section == "filter":
		return name == "clean" || name == "smudge" || name == "process"
	case section == "diff":
		return name == "textconv" || name == "command"
	case section == "merge":
		return name == "driver"
	case section == "gpg", section == "credential":
		return name == "program" || name == "helper"
	case section == "remote":
		return name == "uploadpack" || name == "receivepack"
	case section == "difftool", section == "mergetool", section == "browser", section == "man":
		return name == "cmd" || name == "path"
	case section == "hook":
		return name == "command"
	}
	return false
}

// commandWords splits a shell command line into its words, loosely: on
// blanks and the shell's operators, quotes removed. Every word that names
// a file is kept read-only, so a word too many costs nothing.
func commandWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return strings.ContainsRune(" \t\n;|&()<>'\"`$=", r)
	})
}

// configPath returns the path a configuration value names: ~/ expanded,
// relative to base, symbolic links resolved ("" when it is not there).
func configPath(v, base, home string) string {
	switch {
	case v == "":
		return ""
	case strings.HasPrefix(v, "~/") && home != "":
		v = filepath.Join(home, v[2:])
	case !filepath.IsAbs(v):
		v = filepath.Join(base, v)
	}
	r, err := filepath.EvalSymlinks(v)
	if err != nil {
		return ""
	}
	return r
}
