package authz

// What the judge reads from the file system: where paths resolve now, what
// globs and the patterns of programs that glob match, the .git a tree
// writer would reach. Nothing here decides.

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toold/toold/pkg/authz/internal/shellread"
	"github.com/toold/toold/pkg/workspace"
)

// expandHome expands a leading ~ of p.
func (j *judgement) expandHome(p string) string {
	if j.e.home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return j.e.home + p[1:]
	}
	return p
}

// effectPath adds a path from Effect.Reads or Effect.Writes, resolved as
// the tool resolves it; workdir marks the directory of a command line.
func (j *judgement) effectPath(given string, acc access, workdir bool) {
	f := &facet{kind: facetPath, acc: acc, given: given, cmd: -1, workdir: workdir}
	if workdir {
		f.acc = accArg
	}
	f.loc, f.resolveErr = j.e.ws.Resolve(given)
	if workdir && j.workdir == "" && f.resolveErr == nil {
		if fi, err := os.Stat(f.loc.Abs); err == nil && fi.IsDir() {
			j.workdir = f.loc.Abs
		}
	}
	if strings.IndexByte(given, 0) < 0 {
		lex := j.expandHome(given)
		if !filepath.IsAbs(lex) {
			lex = filepath.Join(j.e.wsDir, lex)
		}
		f.lexical = filepath.Clean(lex)
	}
	f.plain = !workdir && f.resolveErr == nil && f.loc.Exists && f.loc.Inside &&
		f.loc.Abs == f.lexical && !strings.HasPrefix(given, "~") && !workspace.HasDotDot(given)
	j.add(f)
}

// existsIn reports whether name exists in one of dirs.
func (j *judgement) existsIn(name string, dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
			return true
		}
	}
	return false
}

// pseudoDevices are paths that read or write nothing on disk.
var pseudoDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2"}

// commandPath adds a path a command names, resolved from each directory
// the line may be in; a glob is expanded (bounded) and its fixed
// directory added.
func (j *judgement) commandPath(i int, w shellread.Word, acc access, dirs []string) {
	if w.Extglob {
		if i >= 0 && i < len(j.cmds) {
			j.cmds[i].AddProblem(shellread.Problem{Rule: shellread.RuleDynamicPath, Reason: "the pattern " + w.Src + " is an extended glob, whose matches cannot be judged", Hard: true})
		}
		return
	}
	t := j.expandHome(w.Text)
	if slices.Contains(pseudoDevices, path.Clean(t)) {
		return
	}
	if w.Glob {
		j.globPaths(i, t, acc, dirs)
		return
	}
	if filepath.IsAbs(t) {
		j.pathFacet(i, t, acc, w.Text)
		return
	}
	for _, d := range dirs {
		j.pathFacet(i, d+"/"+t, acc, w.Text)
	}
}

func (j *judgement) pathFacet(i int, p string, acc access, given string) {
	f := &facet{kind: facetPath, acc: acc, given: given, cmd: i, lexical: filepath.Clean(p)}
	f.loc, f.resolveErr = j.e.ws.Resolve(p)
	j.add(f)
}

// treeWriters are programs that write or delete whole trees, or extract
// into their directory: what they bring may land in a .git below.
var treeWriters = map[string]bool{"cp": true, "rsync": true, "tar": true, "bsdtar": true, "unzip": true,
	"rm": true, "ditto": true, "cpio": true, "patch": true, "7z": true}

// extractsHere are the tree writers that write into the directory they run
// in without naming it.
var extractsHere = map[string]bool{"tar": true, "bsdtar": true, "unzip": true, "patch": true, "cpio": true, "7z": true}

// treeWriters asks for a command that writes or deletes a whole tree that
// holds a .git (cp -r x/. ., rsync -a x/ ., rm -rf ws, tar x): git's
// internals below it are judged as written, so the git-internals rule
// applies as it does to a write that names them.
func (j *judgement) treeWriters(i int, c *shellread.Command, dirs []string) {
	name := c.Name()
	if c.WrapperOnly || !treeWriters[name] {
		return
	}
	if name == "cp" || name == "rm" {
		// Only recursively.
		sh := shellread.ShapeOf(c.Args())
		if !sh.HasFlag([]string{"-r", "-R", "-a", "--recursive", "--archive"}, true) {
			return
		}
	}
	var roots []string
	for _, f := range j.facets {
		if f.kind == facetPath && f.cmd == i && f.resolveErr == nil && f.loc.Exists && f.acc != accRead {
			roots = append(roots, f.loc.Abs)
		}
	}
	if extractsHere[name] {
		roots = append(roots, dirs...)
	}
	for _, r := range roots {
		g := filepath.Join(r, ".git")
		if _, err := os.Lstat(g); err == nil {
			j.pathFacet(i, g, accWrite, g)
		}
	}
}

// globbingPrograms expand glob patterns given as (quoted) arguments
// themselves, recursively: git pathspecs, find -name, rg -g, grep
// --include, fd.
var globbingPrograms = []string{"git", "find", "rg", "grep", "egrep", "fgrep", "fd", "fdfind", "ag", "ack", "tar", "zip", "rsync"}

// programGlobs adds, for a program that expands glob patterns itself, the
// files a quoted pattern argument matches in the directories the line may
// be in (recursively, dot files included, bounded), so that
// git grep --no-index -- '*.env' is judged as reading .env.
func (j *judgement) programGlobs(i int, c *shellread.Command, dirs []string) {
	if c.WrapperOnly || !slices.Contains(globbingPrograms, c.Name()) {
		return
	}
	var pats []string
	for _, w := range c.Args()[1:] {
		if !w.Literal || w.Glob {
			continue
		}
		for _, cand := range argCandidates(w.Text) {
			if strings.ContainsAny(cand, "*?[") {
				pats = append(pats, strings.TrimPrefix(cand, ":(glob)"))
			}
		}
	}
	if len(pats) == 0 {
		return
	}
	read := 0
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, de os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if read++; read > maxGlobEntries {
				return filepath.SkipAll
			}
			rel, _ := filepath.Rel(d, p)
			for _, pat := range pats {
				if ok, _ := shellread.GlobMatch(pat, de.Name()); ok {
					j.pathFacet(i, p, accRead, pat)
				} else if ok, _ := path.Match(pat, rel); ok {
					j.pathFacet(i, p, accRead, pat)
				}
			}
			return nil
		})
	}
	if read > maxGlobEntries {
		c.AddProblem(shellread.Problem{Rule: ruleTooMany, Reason: "the patterns " + strings.Join(pats, " ") + " of " + c.Name() + " match in too many files to judge", Hard: false})
	}
}

// maxGlobEntries bounds the directory entries a glob may read.
const maxGlobEntries = 20000

// globPaths adds what a glob in a command matches now, and the directory
// before its first wildcard.
func (j *judgement) globPaths(i int, t string, acc access, dirs []string) {
	bases := dirs
	if filepath.IsAbs(t) {
		bases = []string{""}
	}
	for _, d := range bases {
		pattern := t
		if d != "" {
			pattern = d + "/" + t
		}
		k := strings.IndexAny(pattern, "*?[")
		if k < 0 {
			// A glob of bash's own (extglob) without * ? or [.
			k = len(pattern)
		}
		fixed := pattern[:k]
		if k := strings.LastIndexByte(fixed, '/'); k >= 0 {
			fd := fixed[:k]
			if fd == "" {
				fd = "/"
			}
			if fd != d {
				j.pathFacet(i, fd, acc, t)
			}
		}
		matches, complete, judged := boundedGlob(pattern, maxGlobEntries)
		if !judged && i >= 0 && i < len(j.cmds) {
			j.cmds[i].AddProblem(shellread.Problem{Rule: shellread.RuleDynamicPath, Reason: "the pattern " + t + " uses bracket forms the judge cannot match as bash does", Hard: true})
		}
		for _, m := range matches {
			j.pathFacet(i, m, acc, t)
		}
		if !complete && i >= 0 && i < len(j.cmds) {
			j.cmds[i].AddProblem(shellread.Problem{Rule: ruleTooMany, Reason: fmt.Sprintf("the pattern %s matches too many files to judge", t), Hard: false})
		}
	}
}

// boundedGlob expands an absolute glob as bash does (no dot files unless the
// pattern names them), reading at most limit directory entries.
func boundedGlob(pattern string, limit int) (matches []string, complete, judged bool) {
	parts := strings.Split(filepath.Clean(pattern), "/")
	cur := []string{"/"}
	read := 0
	for _, part := range parts[1:] {
		if part == "" {
			continue
		}
		var next []string
		if !strings.ContainsAny(part, "*?[") {
			for _, c := range cur {
				next = append(next, filepath.Join(c, part))
			}
			cur = next
			continue
		}
		re, ok := shellread.BashGlob(part)
		if !ok {
			return nil, true, false
		}
		for _, c := range cur {
			ents, err := os.ReadDir(c)
			if err != nil {
				continue
			}
			read += len(ents)
			if read > limit {
				return nil, false, true
			}
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(part, ".") {
					continue
				}
				if re.MatchString(e.Name()) {
					next = append(next, filepath.Join(c, e.Name()))
				}
			}
		}
		cur = next
		if len(cur) == 0 {
			return nil, true, true
		}
	}
	var out []string
	for _, c := range cur {
		if _, err := os.Lstat(c); err == nil {
			out = append(out, c)
		}
	}
	return out, true, true
}

func (j *judgement) addHost(h string, cmd int) {
	n := normalizeHost(h)
	if n == "" {
		return
	}
	j.add(&facet{kind: facetHost, host: n, given: h, cmd: cmd})
}
