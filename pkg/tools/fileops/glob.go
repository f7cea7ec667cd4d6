package fileops

import (
	"cmp"
	"context"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

var globOp = &operation{
	name: "glob",
	description: "Find files and directories whose paths match a glob pattern: * matches within one name, " +
		"** any number of directories, ? one character, [abc] a character class, {a,b} alternatives " +
		"(e.g. **/*_test.go, src/**/*.{ts,tsx}, cmd/*/main.go). Returns workspace-relative paths (absolute ones outside the workspace) sorted by path, " +
		"directories with a trailing /. Skips .git, entries matched by .gitignore and hidden entries " +
		"(unless the pattern names a hidden one, like .github/**/*.yml); symlinks are listed but not followed.",
	risk:     tools.RiskLow,
	fast:     true,
	schema:   globSchema,
	describe: (*FileOperations).describeGlob,
	run:      (*FileOperations).glob,
}

func globSchema(l tools.Limits) string {
	return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "pattern": {
      "type": "string",
      "minLength": 1,
      "description": "scan.Glob pattern matched against paths relative to path, e.g. **/*.go (any depth), *.md (directly in path), internal/**/handler_*.go. At most %d matches are returned."
    },
    "path": {
      "type": "string",
      "default": ".",
      "description": "Directory to search from, relative to the workspace root (an absolute path inside the workspace also works). Defaults to the workspace root."
    }
  },
  "required": ["pattern"],
  "additionalProperties": false
}`, l.ListItems)
}

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

// describeGlob reads the directory the walk starts in: path, joined with
// the pattern's leading literal directories (glob's start, so that policy
// judges an absolute or ../ pattern by where it looks).
func (f *FileOperations) describeGlob(call *tools.Call) tools.Effect {
	p, _ := call.Args["pattern"].(string)
	dir, _ := call.Args["path"].(string)
	start, _ := globStart(orDefault(dir), p)
	return tools.Effect{Display: "Finding files: " + clip(p), Reads: []string{start}}
}

// globStart returns the directory a glob of pattern in dir starts in, and
// the rest of the pattern, matched below it.
func globStart(dir, pattern string) (start, rest string) {
	base, rest := doublestar.SplitPattern(pattern)
	if path.IsAbs(base) {
		return base, rest
	}
	return path.Join(dir, base), rest
}

// pathMatcher matches entry paths against a glob pattern relative to the
// directory a walk starts in.
type pathMatcher struct {
	startRel string
	byName   bool // the pattern matches the base name alone
	g        scan.Glob
	maxDepth int  // deepest entry that can match; 0 for any
	hidden   bool // the pattern names a hidden entry
}

// newPathMatcher compiles pattern, relative to startRel. ok is false when the
// pattern is malformed.
func newPathMatcher(startRel, pattern string) (m pathMatcher, ok bool) {
	m.startRel = startRel
	for _, part := range strings.Split(pattern, "/") {
		if len(part) > 1 && part[0] == '.' && part != ".." {
			m.hidden = true
		}
	}
	braces := strings.ContainsAny(pattern, "{}")
	p := pattern
	if rest, ok := strings.CutPrefix(p, "**/"); ok && !strings.Contains(rest, "/") && !strings.Contains(rest, "**") && !braces {
		m.byName, p = true, rest // "**/x" matches x at any depth: match the name
	} else if !strings.Contains(p, "**") && !braces {
		m.maxDepth = strings.Count(p, "/") + 1
		m.byName = m.maxDepth == 1
	}
	m.g, ok = scan.CompileGlob(p)
	return m, ok
}

// match reports whether the entry name at rel (workspace-relative) matches.
func (m *pathMatcher) match(rel, name string) bool {
	if m.byName {
		return m.g.Match(name)
	}
	return m.g.Match(scan.Below(m.startRel, rel))
}

// globVisitor collects the matches of a walk.
type globVisitor struct {
	m     pathMatcher
	keep  int         // matches to keep: the first keep by path
	per   [][]globHit // per worker
	total []int       // per worker
}

type globHit struct {
	rel string
	dir bool
}

func (v *globVisitor) add(worker int, h globHit) {
	v.total[worker]++
	hits := append(v.per[worker], h)
	if len(hits) >= 8*v.keep { // keep memory bounded: only the first keep by path can be shown
		slices.SortFunc(hits, compareHits)
		clear(hits[v.keep:])
		hits = hits[:v.keep]
	}
	v.per[worker] = hits
}

func compareHits(a, b globHit) int { return cmp.Compare(a.rel, b.rel) }

func (v *globVisitor) Dir(worker int, parent *scan.Node, name, rel string) bool {
	if v.m.match(rel, name) {
		v.add(worker, globHit{rel: rel, dir: true})
	}
	return true
}

func (v *globVisitor) File(worker int, parent *scan.Node, name string, _ fs.FileMode) {
	if v.m.byName {
		if v.m.g.Match(name) {
			v.add(worker, globHit{rel: parent.Child(name)})
		}
		return
	}
	if rel := parent.Child(name); v.m.match(rel, name) {
		v.add(worker, globHit{rel: rel})
	}
}

func (f *FileOperations) glob(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	var args globArgs
	if err := bind(call, &args); err != nil {
		return nil, err
	}
	if args.Pattern == "" {
		return nil, errdefs.Invalid("/pattern", "required", "pattern is required, e.g. **/*.go")
	}
	dir, pattern := globStart(orDefault(args.Path), args.Pattern)
	if pattern == "" {
		return nil, errdefs.Invalid("/pattern", "format", "pattern %q names a directory; add what to match in it, e.g. %s/**/*", args.Pattern, strings.TrimSuffix(args.Pattern, "/"))
	}
	field := "path"
	if base, _ := doublestar.SplitPattern(args.Pattern); base != "." {
		field = "pattern" // the pattern names the directory
	}
	t, err := f.locateRead(call, field, dir)
	if err != nil {
		return nil, err
	}
	defer t.close()
	rel := t.show
	m, ok := newPathMatcher(rel, pattern)
	if !ok {
		return nil, errdefs.Invalid("/pattern", "format", "pattern %q is not a valid glob: check its brackets and braces ([abc], {a,b}) and escapes", args.Pattern)
	}
	start, err := t.openDir("glob")
	if err != nil {
		return nil, err
	}
	start.Ign = f.startIgnores(t)
	v := &globVisitor{m: m, keep: f.limits.ListItems}
	w := scan.NewWalker(scan.Config{Dotfiles: m.hidden, MaxDepth: m.maxDepth, Inline: true, Withhold: f.withholdFor(t)}, v)
	v.per = make([][]globHit, w.Cfg.Workers)
	v.total = make([]int, w.Cfg.Workers)
	w.Run(ctx, start)
	if ctx.Err() != nil {
		return nil, ctxError(ctx, "glob")
	}

	var hits []globHit
	total := 0
	for i := range v.per {
		hits = append(hits, v.per[i]...)
		total += v.total[i]
	}
	slices.SortFunc(hits, compareHits)
	hits = hits[:min(len(hits), f.limits.ListItems)]

	var out strings.Builder
	matches := make([]string, len(hits))
	for i, h := range hits {
		matches[i] = h.rel
		if h.dir {
			matches[i] += "/"
		}
		out.WriteString(matches[i])
		out.WriteByte('\n')
	}
	res := &tools.Result{Structured: map[string]any{
		"pattern": args.Pattern,
		"path":    rel,
		"matches": matches,
		"total":   total,
	}}
	if total == 0 {
		fmt.Fprintf(&out, "No files match %q in %s. (.git, hidden entries and entries matched by .gitignore are skipped.)", args.Pattern, rel)
	}
	if len(hits) < total {
		fmt.Fprintf(&out, "\n[Showing the first %d of %d matches, sorted by path. Use a more specific pattern or path to see the rest.]", len(hits), total)
		res.Truncation = &tools.Truncation{
			ShownItems:   uint64(len(hits)),
			TotalItems:   uint64(total),
			Continuation: "use a more specific pattern or path",
		}
	}
	if n := w.Withheld.Load(); n > 0 {
		fmt.Fprintf(&out, "\n%s", withheldNote(n))
		res.Structured["withheld"] = n
	}
	res.Text = strings.TrimRight(out.String(), "\n")
	return res, nil
}
