package authz

import (
	"fmt"
	"github.com/toold/toold/pkg/authz/internal/shellread"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Path patterns of the policy file.

// pathKind says what a path pattern is anchored to.
type pathKind int

const (
	pathAbs  pathKind = iota + 1 // /etc/shadow
	pathHome                     // ~/.ssh
	pathRel                      // .github/workflows/** (the workspace)
	pathName                     // *.pem: any component
)

// pathPattern matches a path or any directory above it, gitignore-like:
// "~/.ssh" matches ~/.ssh/id_rsa. Globs are doublestar's (** crosses
// directories). A pattern without / matches any component of the path
// (inside the workspace: of the path relative to it).
type pathPattern struct {
	src    string
	kind   pathKind
	glob   string
	negate bool
	// lit is the glob's literal directory prefix (up to the last / before
	// its first glob character): a path, or a directory above it, can only
	// match when the path starts with it. literal says the whole glob has
	// no glob characters.
	lit     string
	literal bool
	// name matches one path component, for pathName patterns; common
	// shapes (literal, *.ext, prefix*) avoid a glob match.
	name func(string) bool
}

// globMeta are the characters that make a glob more than a literal.
const globMeta = "*?[{\\"

// prepare fills the fast-match fields of a compiled pattern.
func (pp *pathPattern) prepare() {
	g := pp.glob
	i := strings.IndexAny(g, globMeta)
	pp.literal = i < 0
	if pp.literal {
		pp.lit = g
	} else if j := strings.LastIndexByte(g[:i], '/'); j >= 0 {
		pp.lit = g[:j+1]
	}
	if pp.kind != pathName {
		return
	}
	switch {
	case pp.literal:
		pp.name = func(c string) bool { return c == g }
	case strings.HasPrefix(g, "*") && !strings.ContainsAny(g[1:], globMeta):
		suffix := g[1:]
		pp.name = func(c string) bool { return strings.HasSuffix(c, suffix) }
	case strings.HasSuffix(g, "*") && !strings.ContainsAny(g[:len(g)-1], globMeta):
		prefix := g[:len(g)-1]
		pp.name = func(c string) bool { return strings.HasPrefix(c, prefix) }
	default:
		pp.name = func(c string) bool { ok, _ := doublestar.Match(g, c); return ok }
	}
}

func compilePathPattern(s string) (pathPattern, error) {
	pp := pathPattern{src: s}
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "!") {
		pp.negate = true
		t = t[1:]
	}
	if t == "" {
		return pp, fmt.Errorf("empty path pattern")
	}
	if t != "/" {
		t = strings.TrimSuffix(t, "/")
	}
	switch {
	case t == "~":
		pp.kind, t = pathHome, "~"
	case strings.HasPrefix(t, "~/"):
		pp.kind = pathHome
		t = "~/" + cleanGlob(t[2:])
	case strings.HasPrefix(t, "/"):
		pp.kind = pathAbs
		t = cleanGlob(t)
		if !strings.HasPrefix(t, "/") {
			t = "/" + t
		}
	case strings.Contains(t, "/"):
		pp.kind = pathRel
		t = cleanGlob(strings.TrimPrefix(t, "./"))
	default:
		pp.kind = pathName
	}
	if !doublestar.ValidatePattern(t) {
		return pp, fmt.Errorf("path pattern %q is not a valid glob", s)
	}
	pp.glob = t
	pp.prepare()
	return pp, nil
}

// cleanGlob cleans a glob like a path, keeping a leading /.
func cleanGlob(g string) string {
	if g == "" {
		return g
	}
	c := path.Clean(g)
	if c == "." {
		return g
	}
	return c
}

// pathScope is what a path pattern is matched in: the workspace and the
// home directories whose ~ forms apply.
type pathScope struct {
	ws string
	// homes are home directories; ~/x patterns match below any of them.
	homes []string
	// anyHome also treats /home/NAME and /root as homes (sensitive paths
	// of every user).
	anyHome bool
}

func (sc pathScope) homeForms(abs string) []string {
	var out []string
	add := func(h string) {
		if rest, ok := shellread.CutDir(abs, h); ok {
			f := "~"
			if rest != "." {
				f = "~/" + rest
			}
			for _, o := range out {
				if o == f {
					return
				}
			}
			out = append(out, f)
		}
	}
	for _, h := range sc.homes {
		add(h)
	}
	if sc.anyHome {
		add("/root")
		if rest, ok := strings.CutPrefix(abs, "/home/"); ok {
			user, _, _ := strings.Cut(rest, "/")
			if user != "" {
				add("/home/" + user)
			}
		}
	}
	return out
}

// match reports whether abs (absolute, clean) or a directory above it
// matches.
func (pp pathPattern) match(abs string, sc pathScope) bool {
	ok, _ := pp.matchLevel(abs, sc)
	return ok
}

// matchLevel is match, and reports whether the path itself matched (leaf)
// rather than only a directory above it.
func (pp pathPattern) matchLevel(abs string, sc pathScope) (ok, leaf bool) {
	return pp.matchIn(newPathSubject(filepath.ToSlash(abs), sc))
}

// pathSubject is a path prepared for matching against many patterns: its
// ~ forms and the part its components are read from are computed once.
type pathSubject struct {
	abs       string
	sc        pathScope
	forms     []string
	formsDone bool
	// rel is what name patterns look at: the path relative to the
	// workspace when inside it, else the absolute path.
	rel     string
	relDone bool
}

func newPathSubject(abs string, sc pathScope) *pathSubject {
	return &pathSubject{abs: abs, sc: sc}
}

func (s *pathSubject) homeForms() []string {
	if !s.formsDone {
		s.forms, s.formsDone = s.sc.homeForms(s.abs), true
	}
	return s.forms
}

func (s *pathSubject) nameScope() string {
	if !s.relDone {
		s.rel, s.relDone = s.abs, true
		if rel, ok := shellread.CutDir(s.abs, s.sc.ws); ok {
			s.rel = rel
		}
	}
	return s.rel
}

// matchIn is matchLevel for a prepared subject.
func (pp pathPattern) matchIn(s *pathSubject) (ok, leaf bool) {
	switch pp.kind {
	case pathAbs:
		return pp.matchOrAncestor(s.abs)
	case pathHome:
		for _, f := range s.homeForms() {
			if ok, leaf := pp.matchOrAncestor(f); ok {
				return ok, leaf
			}
		}
	case pathRel:
		if rel, ok := shellread.CutDir(s.abs, s.sc.ws); ok && rel != "." {
			return pp.matchOrAncestor(rel)
		}
	case pathName:
		// Each component, without splitting into a slice.
		p := s.nameScope()
		for len(p) > 0 {
			c, rest, more := strings.Cut(p, "/")
			if c != "" && c != "." && pp.name(c) {
				return true, !more
			}
			p = rest
		}
	}
	return false, false
}

// matchOrAncestor is matchOrAncestor with the pattern's fast paths: a path
// not starting with the literal prefix cannot match, and a literal pattern
// matches itself and what is below it.
func (pp pathPattern) matchOrAncestor(p string) (ok, leaf bool) {
	if !strings.HasPrefix(p, pp.lit) {
		return false, false
	}
	if pp.literal {
		switch {
		case p == pp.lit:
			return true, true
		case strings.HasPrefix(p[len(pp.lit):], "/") || strings.HasSuffix(pp.lit, "/"):
			return true, false
		}
		return false, false
	}
	return matchOrAncestor(pp.glob, p)
}

// matchOrAncestor reports whether glob matches p or a directory above it,
// and whether it matched p itself.
func matchOrAncestor(glob, p string) (ok, leaf bool) {
	leaf = true
	for {
		if ok, _ := doublestar.Match(glob, p); ok {
			return true, leaf
		}
		parent := path.Dir(p)
		if parent == p || parent == "." || p == "~" {
			return false, false
		}
		p, leaf = parent, false
	}
}
