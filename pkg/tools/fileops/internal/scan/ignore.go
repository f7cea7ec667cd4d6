package scan

import (
	"bytes"
	"io"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
)

// .gitignore matching.
//
// This is hand-written on purpose. go-git's plumbing/format/gitignore, the
// well-kept library for it, matches every pattern against every component of
// an entry's path (simpleNameMatch loops over the whole path), so its cost per
// entry grows with patterns x depth, and it takes the path as a []string that
// a walker would have to build for every entry; its ParsePattern also leaves
// comments, "\#" and "\!" escapes to the caller. A walk never enters an
// ignored directory, so only the entry's own name (for patterns without a
// slash) or its path below the .gitignore's directory (for patterns with one)
// has to be matched, which is what ignoreRule does, with fast paths for the
// usual shapes ("node_modules", "*.log", "build/") and doublestar, whose
// semantics for *, ?, [...] and ** are those of gitignore(5), for the rest.

// maxIgnoreFile bounds how much of a .gitignore file is read.
const maxIgnoreFile = 1 << 20

// ignoreRule is one pattern line of a .gitignore file.
type ignoreRule struct {
	g        Glob
	negate   bool // "!pattern": re-include
	dirOnly  bool // "pattern/": only directories
	anchored bool // the pattern has a slash: match the path below the file's directory
}

// parseIgnore parses the contents of a .gitignore file as gitignore(5)
// describes. Lines that are not valid patterns are skipped.
func parseIgnore(data []byte) []ignoreRule {
	var rules []ignoreRule
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if r, ok := parseIgnoreLine(string(bytes.TrimSuffix(line, []byte{'\r'}))); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

func parseIgnoreLine(line string) (ignoreRule, bool) {
	var r ignoreRule
	if line == "" || line[0] == '#' {
		return r, false
	}
	// Trailing spaces are ignored unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
		line = line[:len(line)-1]
	}
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return r, false
	}
	r.anchored = strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if rest, ok := strings.CutPrefix(line, "**/"); ok && !strings.Contains(rest, "/") {
		// "**/name" matches name at any depth, like a pattern without a slash.
		r.anchored, line = false, rest
	}
	g, ok := CompileGlob(escapeBraces(line))
	if !ok {
		return r, false
	}
	r.g = g
	return r, true
}

// escapeBraces escapes { and }, which gitignore patterns take literally and
// doublestar would read as alternatives.
func escapeBraces(p string) string {
	if !strings.ContainsAny(p, "{}") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			b.WriteByte(c)
			if i+1 < len(p) {
				i++
				b.WriteByte(p[i])
			}
		case '{', '}':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// IgnoreList is the set of .gitignore rules in force in one directory: the
// rules of the .gitignore in base, then, through parent, those of each
// directory above it. It is immutable and shared by the goroutines of a walk.
type IgnoreList struct {
	parent *IgnoreList
	base   string // directory of the .gitignore, named as Node.Rel names it
	rules  []ignoreRule
}

// push returns a list with the rules of the .gitignore file in base on top of
// l, or l itself when there are none.
func (l *IgnoreList) push(base string, rules []ignoreRule) *IgnoreList {
	if len(rules) == 0 {
		return l
	}
	return &IgnoreList{parent: l, base: base, rules: rules}
}

// Ignored reports whether the entry at rel (workspace-relative, inside the
// directory l belongs to) with the given base name is Ignored. The last
// matching rule of the deepest .gitignore that has one decides, as in git.
func (l *IgnoreList) Ignored(rel, name string, isDir bool) bool {
	for ; l != nil; l = l.parent {
		sub := ""
		for i := len(l.rules) - 1; i >= 0; i-- {
			r := &l.rules[i]
			if r.dirOnly && !isDir {
				continue
			}
			var ok bool
			if r.anchored {
				if sub == "" {
					sub = Below(l.base, rel)
				}
				ok = r.g.Match(sub)
			} else {
				ok = r.g.Match(name)
			}
			if ok {
				return !r.negate
			}
		}
	}
	return false
}

// Below returns rel relative to the directory base, which contains it;
// both are workspace-relative, or both absolute.
func Below(base, rel string) string {
	switch base {
	case ".":
		return rel
	case "/":
		return rel[1:]
	}
	return rel[len(base)+1:]
}

// LoadAncestorIgnores returns the .gitignore rules of the directories from
// the root (the workspace) down to, but not including, rel; the walk reads rel's
// own .gitignore itself. Unreadable files are skipped.
func LoadAncestorIgnores(root *os.Root, rel string) *IgnoreList {
	if rel == "." {
		return nil
	}
	var l *IgnoreList
	dir := "."
	for _, part := range strings.Split(rel, "/") {
		l = l.push(dir, readIgnoreFile(root, path.Join(dir, ".gitignore")))
		dir = path.Join(dir, part)
	}
	return l
}

// readIgnoreFile reads the .gitignore file name through root. Anything but
// a regular file is skipped without being opened (opening a FIFO would
// block, opening a device can act by itself); one swapped in after the
// stat is opened without blocking and skipped.
func readIgnoreFile(root *os.Root, name string) []ignoreRule {
	if fi, err := root.Stat(name); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil {
		return nil
	}
	return parseIgnore(data)
}

// Glob matches a doublestar pattern, with fast paths for the common
// shapes. The zero value matches nothing.
type Glob struct {
	kind globKind
	lit  string
	pat  string
}

type globKind uint8

const (
	globNone   globKind = iota
	globExact           // "name"
	globSuffix          // "*.go"
	globPrefix          // "Makefile*"
	globAny             // "*"
	globFull            // anything else, by doublestar
)

// CompileGlob compiles a doublestar pattern; ok is false when it is malformed.
func CompileGlob(p string) (Glob, bool) {
	if !doublestar.ValidatePattern(p) {
		return Glob{}, false
	}
	const meta = `*?[\{`
	switch {
	case !strings.ContainsAny(p, meta):
		return Glob{kind: globExact, lit: p}, true
	case p == "*":
		return Glob{kind: globAny}, true
	case p[0] == '*' && !strings.ContainsAny(p[1:], meta):
		return Glob{kind: globSuffix, lit: p[1:]}, true
	case p[len(p)-1] == '*' && !strings.ContainsAny(p[:len(p)-1], meta):
		return Glob{kind: globPrefix, lit: p[:len(p)-1]}, true
	}
	return Glob{kind: globFull, pat: p}, true
}

// Match reports whether s, a slash-separated path or a name, matches.
func (g *Glob) Match(s string) bool {
	switch g.kind {
	case globExact:
		return s == g.lit
	case globAny:
		return !strings.Contains(s, "/")
	case globSuffix:
		return strings.HasSuffix(s, g.lit) && !strings.Contains(s[:len(s)-len(g.lit)], "/")
	case globPrefix:
		return strings.HasPrefix(s, g.lit) && !strings.Contains(s[len(g.lit):], "/")
	case globFull:
		return doublestar.MatchUnvalidated(g.pat, s)
	}
	return false
}

// IgnoresFor returns the .gitignore rules in force in the workspace
// directory dir (workspace-relative, "." for the root): those of the
// directories above it and its own.
func IgnoresFor(root *os.Root, dir string) *IgnoreList {
	return LoadAncestorIgnores(root, dir).push(dir, readIgnoreFile(root, path.Join(dir, ".gitignore")))
}
