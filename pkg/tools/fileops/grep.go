package fileops

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"io/fs"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

var grepSearchOp = &operation{
	name: "grep_search",
	description: "Search file contents with a regular expression (Go RE2 syntax), like ripgrep. " +
		"Returns matching lines as path:line:text (context lines as path-line-text, groups separated by --), " +
		"sorted by path and line. Searches the files below path in parallel; skips .git, hidden files, " +
		"binary files and files matched by .gitignore. Use include to limit the files searched, e.g. *.go.",
	risk:     tools.RiskLow,
	schema:   grepSchema,
	describe: (*FileOperations).describeGrep,
	run:      (*FileOperations).grep,
}

// Bounds of grep_search's arguments.
const (
	maxMaxResults = 2000
)

// progressEvery is the interval of progress reports of a search; a
// variable for tests.
var progressEvery = 250 * time.Millisecond

func grepSchema(l tools.Limits) string {
	return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "pattern": {
      "type": "string",
      "minLength": 1,
      "description": "Regular expression in Go RE2 syntax, matched against each line (e.g. func\\s+\\w+Handler, TODO|FIXME). Escape regex characters to search for them literally: \\(, \\., \\[. A match cannot span lines."
    },
    "path": {
      "type": "string",
      "default": ".",
      "description": "File or directory to search, relative to the workspace root (an absolute path inside the workspace also works). Defaults to the workspace root."
    },
    "include": {
      "type": "string",
      "minLength": 1,
      "description": "Only search files whose path matches this glob, e.g. *.go or **/*.{ts,tsx}. A pattern without a slash matches the file name at any depth; one with a slash matches the path relative to path (or to the workspace root)."
    },
    "ignore_case": {
      "type": "boolean",
      "default": false,
      "description": "Match letters case-insensitively."
    },
    "context_lines": {
      "type": "integer",
      "minimum": 0,
      "maximum": %d,
      "default": 0,
      "description": "Lines of context to show before and after each matching line."
    },
    "max_results": {
      "type": "integer",
      "minimum": 1,
      "maximum": %d,
      "default": %d,
      "description": "Maximum number of matching lines to return; the total is still counted and reported."
    }
  },
  "required": ["pattern"],
  "additionalProperties": false
}`, scan.MaxContext, maxMaxResults, min(l.SearchMatches, maxMaxResults))
}

type grepArgs struct {
	Pattern      string `json:"pattern"`
	Path         string `json:"path"`
	Include      string `json:"include"`
	IgnoreCase   bool   `json:"ignore_case"`
	ContextLines intArg `json:"context_lines"`
	MaxResults   intArg `json:"max_results"`
}

func (f *FileOperations) describeGrep(call *tools.Call) tools.Effect {
	p, _ := call.Args["pattern"].(string)
	dir, _ := call.Args["path"].(string)
	return tools.Effect{Display: "Searching code: " + clip(p), Reads: []string{orDefault(dir)}}
}

// includeMatcher is grep_search's include filter.
type includeMatcher struct {
	startRel string
	byName   bool
	g        scan.Glob
	hidden   bool // the pattern names a hidden entry
}

func newIncludeMatcher(startRel, pattern string) (includeMatcher, bool) {
	m := includeMatcher{startRel: startRel}
	for _, part := range strings.Split(pattern, "/") {
		if len(part) > 1 && part[0] == '.' && part != ".." {
			m.hidden = true
		}
	}
	p := pattern
	m.byName = !strings.Contains(p, "/")
	if rest, ok := strings.CutPrefix(p, "**/"); ok && !strings.ContainsAny(rest, "/{}") && !strings.Contains(rest, "**") {
		m.byName, p = true, rest
	}
	var ok bool
	m.g, ok = scan.CompileGlob(p)
	return m, ok
}

func (m *includeMatcher) match(rel, name string) bool {
	if m.byName {
		return m.g.Match(name)
	}
	return m.g.Match(scan.Below(m.startRel, rel)) || (m.startRel != "." && m.g.Match(rel))
}

// fileResult is the result of one file with matches.
type fileResult struct {
	path    string
	matches int // matching lines
	stored  int // matching lines in recs
	recs    []scan.LineRec
}

// collector gathers the results of the files of a search. It keeps only the
// files that can hold the first max matches in path order: memory stays
// bounded whatever the tree.
type collector struct {
	mu           sync.Mutex
	max          int
	files        fileHeap // max-heap by path
	kept         int      // stored matches in files
	filesMatched int
	totalMatches int
}

func (c *collector) add(r *fileResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.filesMatched++
	c.totalMatches += r.matches
	heap.Push(&c.files, r)
	c.kept += r.stored
	for len(c.files) > 1 && c.kept-c.files[0].stored >= c.max {
		c.kept -= heap.Pop(&c.files).(*fileResult).stored
	}
}

type fileHeap []*fileResult

func (h fileHeap) Len() int           { return len(h) }
func (h fileHeap) Less(i, j int) bool { return h[i].path > h[j].path }
func (h fileHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *fileHeap) Push(x any)        { *h = append(*h, x.(*fileResult)) }
func (h *fileHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// grepVisitor searches the files of a walk.
type grepVisitor struct {
	include   *includeMatcher
	searchers []*scan.Searcher // per worker
	coll      *collector
	errs      atomic.Int64 // files that could not be read
	// linked, when set, is asked about each file with more than one hard
	// link before it is searched; false withholds the file (atuse.go).
	linked   func(st *unix.Stat_t) bool
	withheld atomic.Int64 // files linked withheld
	// searched is FileOperations.fileSearched.
	searched func()
}

func (v *grepVisitor) Dir(int, *scan.Node, string, string) bool { return true }

func (v *grepVisitor) File(worker int, parent *scan.Node, name string, typ fs.FileMode) {
	if !typ.IsRegular() { // symlinks are not followed, like ripgrep
		return
	}
	var rel string
	if v.include != nil {
		if !v.include.byName {
			rel = parent.Child(name)
		}
		if !v.include.match(rel, name) {
			return
		}
	}
	fd, err := scan.OpenAt(parent.Fd, name, 0)
	if err != nil {
		v.errs.Add(1)
		return
	}
	if v.linked != nil {
		// A hard link to a sensitive file is withheld like the file.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || (st.Nlink > 1 && !v.linked(&st)) {
			unix.Close(fd)
			v.withheld.Add(1)
			return
		}
	}
	s := v.searchers[worker]
	binary, err := s.Search(fd)
	unix.Close(fd)
	if v.searched != nil {
		v.searched()
	}
	v.record(s, binary, err, func() string {
		if rel == "" {
			rel = parent.Child(name)
		}
		return rel
	})
}

// record adds the result of the file s has just searched.
func (v *grepVisitor) record(s *scan.Searcher, binary bool, err error, path func() string) {
	switch {
	case errors.Is(err, scan.ErrStopped):
		return
	case err != nil:
		v.errs.Add(1)
		return
	case binary:
		s.Binary.Add(1)
		return
	}
	s.Searched.Add(1)
	if s.Matches > 0 {
		v.coll.add(&fileResult{path: path(), matches: s.Matches, stored: s.Stored, recs: slices.Clone(s.Recs)})
	}
}

func (v *grepVisitor) counts() (searched, binary int64) {
	for _, s := range v.searchers {
		searched += s.Searched.Load()
		binary += s.Binary.Load()
	}
	return searched, binary
}

func (f *FileOperations) grep(ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	var args grepArgs
	if err := bind(call, &args); err != nil {
		return nil, err
	}
	ctxLines, maxResults := int(args.ContextLines), int(args.MaxResults)
	if maxResults == 0 {
		maxResults = min(f.limits.SearchMatches, maxMaxResults)
	}
	switch {
	case args.Pattern == "":
		return nil, errdefs.Invalid("/pattern", "required", "pattern is required: a regular expression to search for")
	case ctxLines < 0 || ctxLines > scan.MaxContext:
		return nil, errdefs.Invalid("/context_lines", "maximum", "context_lines must be from 0 to %d, not %d", scan.MaxContext, ctxLines)
	case maxResults < 1 || maxResults > maxMaxResults:
		return nil, errdefs.Invalid("/max_results", "maximum", "max_results must be from 1 to %d, not %d", maxMaxResults, maxResults)
	}
	m, err := scan.CompileMatcher(args.Pattern, args.IgnoreCase)
	switch {
	case errors.Is(err, scan.ErrNewlinePattern):
		return nil, errdefs.Invalid("/pattern", "pattern", "pattern %q contains a line break, but grep_search matches one line at a time; search for a single line", args.Pattern)
	case err != nil:
		return nil, errdefs.Invalid("/pattern", "pattern", "pattern %q is not a valid regular expression (Go RE2 syntax): %v", args.Pattern, err)
	}
	t, err := f.locateRead(call, "path", orDefault(args.Path))
	if err != nil {
		return nil, err
	}
	defer t.close()
	rel := t.show
	var include *includeMatcher
	if args.Include != "" {
		im, ok := newIncludeMatcher(rel, args.Include)
		if !ok {
			return nil, errdefs.Invalid("/include", "format", "include %q is not a valid glob: check its brackets and braces ([abc], {a,b}) and escapes", args.Include)
		}
		include = &im
	}

	fd, st, err := t.open()
	if errors.Is(err, errNotRegular) {
		return nil, grepNotRegular(t, scan.StatType(st.Mode))
	}
	if err != nil {
		return nil, t.mapErr(err)
	}
	coll := &collector{max: maxResults}
	v := &grepVisitor{include: include, coll: coll, searched: f.fileSearched}
	if f.guard != nil {
		u := &tools.Use{Tool: call.Tool, Operation: call.Operation, Args: call.Args, Abs: t.loc.Abs}
		v.linked = func(st *unix.Stat_t) bool { return f.checkOpened(u, st) == nil }
	}
	complete := true
	var withheld int64
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		var stop atomic.Bool
		s := scan.NewSearcher(m, ctxLines, maxResults, f.limits.LineChars, &stop)
		err := f.grepFile(ctx, t, fd, scan.StatType(st.Mode), v, s)
		unix.Close(fd)
		s.Release()
		if err != nil {
			return nil, err
		}
	} else {
		start := &scan.Node{Rel: rel, Fd: fd}
		start.Ign = f.startIgnores(t)
		// Twice as many workers as processors: a worker blocked in a read
		// (a cold cache, a slow disk) leaves its processor to another.
		w := scan.NewWalker(scan.Config{Dotfiles: include != nil && include.hidden, Workers: 2 * runtime.GOMAXPROCS(0), Withhold: f.withholdFor(t)}, v)
		v.searchers = make([]*scan.Searcher, w.Cfg.Workers)
		for i := range v.searchers {
			v.searchers[i] = scan.NewSearcher(m, ctxLines, maxResults, f.limits.LineChars, &w.Stop)
		}
		stopProgress := f.reportProgress(sink, v, w)
		complete = w.Run(ctx, start)
		for _, s := range v.searchers {
			s.Release()
		}
		if err := stopProgress(); err != nil {
			return nil, errdefs.Wrap(errdefs.ErrCanceled, err, "grep_search stopped: the client is gone")
		}
		withheld = w.Withheld.Load()
	}
	withheld += v.withheld.Load()
	if ctx.Err() != nil || !complete {
		return nil, ctxError(ctx, "grep_search")
	}
	res := f.grepResult(&args, rel, ctxLines, maxResults, v)
	if withheld > 0 {
		res.Text += "\n" + withheldNote(withheld)
		res.Structured["files_withheld"] = withheld
	}
	return res, nil
}

// grepFile searches the single file of the target t, open as fd, whose type
// is typ.
func (f *FileOperations) grepFile(ctx context.Context, t *readTarget, fd int, typ fs.FileMode, v *grepVisitor, s *scan.Searcher) error {
	if !typ.IsRegular() {
		return grepNotRegular(t, typ)
	}
	v.searchers = []*scan.Searcher{s}
	stopOnDone := context.AfterFunc(ctx, func() { s.Stop.Store(true) })
	defer stopOnDone()
	binary, err := s.Search(fd)
	if err != nil && !errors.Is(err, scan.ErrStopped) {
		return workspace.MapError(t.loc.Given, err)
	}
	v.record(s, binary, err, func() string { return t.show })
	return nil
}

// grepNotRegular is grep_search's error for the target t, of the type typ,
// neither a regular file nor a directory.
func grepNotRegular(t *readTarget, typ fs.FileMode) error {
	return errdefs.Failed("%q is not a regular file (%s); grep_search searches files and directories", t.loc.Given, typeName(typ))
}

// reportProgress sends a progress line to sink every progressEvery while a
// search runs. The returned function stops it, waits until no report is in
// flight, and returns the sink's error if one made it abort the walk.
func (f *FileOperations) reportProgress(sink *tools.Sink, v *grepVisitor, w *scan.Walker) func() error {
	if sink == nil {
		return func() error { return nil }
	}
	done := make(chan struct{})
	var (
		wg      sync.WaitGroup
		sinkErr error
	)
	wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			searched, _ := v.counts()
			v.coll.mu.Lock()
			matches := v.coll.totalMatches
			v.coll.mu.Unlock()
			msg := fmt.Sprintf("searched %d files, %s so far", searched, plural(matches, "matching line", "matching lines"))
			if err := sink.Progress(msg, -1); err != nil {
				sinkErr = err
				w.Abort()
				return
			}
		}
	})
	return func() error {
		close(done)
		wg.Wait()
		return sinkErr
	}
}

// grepResult renders the collected results for the model.
func (f *FileOperations) grepResult(args *grepArgs, rel string, ctxLines, maxResults int, v *grepVisitor) *tools.Result {
	coll := v.coll
	files := []*fileResult(coll.files)
	slices.SortFunc(files, func(a, b *fileResult) int { return cmp.Compare(a.path, b.path) })
	searched, binary := v.counts()

	var (
		out       strings.Builder
		matches   []map[string]any
		shown     int
		byteCut   bool
		prevPath  string
		prevLine  int
		lastMatch int // line of the last match shown
		lineBuf   []byte
		budget    = f.limits.ReadBytes
	)
render:
	for _, fr := range files {
		for _, r := range fr.recs {
			// After the last match shown, only its after-context.
			if shown == maxResults && (r.Match || fr.path != prevPath || r.Line != prevLine+1 || r.Line > lastMatch+ctxLines) {
				break render
			}
			lineBuf = lineBuf[:0]
			if ctxLines > 0 && prevPath != "" && (fr.path != prevPath || r.Line != prevLine+1) {
				lineBuf = append(lineBuf, "--\n"...)
			}
			sep := byte('-')
			if r.Match {
				sep = ':'
			}
			lineBuf = append(lineBuf, fr.path...)
			lineBuf = append(lineBuf, sep)
			lineBuf = strconv.AppendInt(lineBuf, int64(r.Line), 10)
			lineBuf = append(lineBuf, sep)
			lineBuf = append(lineBuf, r.Text...)
			lineBuf = append(lineBuf, '\n')
			if out.Len()+len(lineBuf) > budget && shown > 0 {
				byteCut = true
				break render
			}
			out.Write(lineBuf)
			prevPath, prevLine = fr.path, r.Line
			if r.Match {
				shown++
				lastMatch = r.Line
				matches = append(matches, map[string]any{"path": fr.path, "line": r.Line, "text": r.Text})
			}
		}
	}

	res := &tools.Result{Structured: map[string]any{
		"pattern":        args.Pattern,
		"path":           rel,
		"matches":        matches,
		"files_searched": searched,
		"files_matched":  coll.filesMatched,
		"total_matches":  coll.totalMatches,
	}}
	if binary > 0 {
		res.Structured["binary_files_skipped"] = binary
	}
	if n := v.errs.Load(); n > 0 {
		res.Structured["unreadable_files"] = n
	}
	if coll.totalMatches == 0 {
		fmt.Fprintf(&out, "No matches for %q in %s (%s searched; .git, hidden, binary and .gitignore'd files are skipped).",
			args.Pattern, rel, plural(int(searched), "file", "files"))
		if args.Include != "" {
			fmt.Fprintf(&out, " Only files matching %q were searched.", args.Include)
		}
	} else if shown < coll.totalMatches {
		why := fmt.Sprintf("max_results=%d", maxResults)
		if byteCut {
			why = "the output limit of " + tools.HumanSize(int64(budget))
		}
		fmt.Fprintf(&out, "\n[Showing %d of %d matching lines in %s (%s searched), cut at %s. Narrow the search with path, include or a more specific pattern",
			shown, coll.totalMatches, plural(coll.filesMatched, "file", "files"), plural(int(searched), "file", "files"), why)
		if !byteCut && maxResults < maxMaxResults {
			fmt.Fprintf(&out, ", or raise max_results (up to %d)", maxMaxResults)
		}
		out.WriteString(".]")
		res.Truncation = &tools.Truncation{
			ShownItems:   uint64(shown),
			TotalItems:   uint64(coll.totalMatches),
			Continuation: "narrow the search with path, include or a more specific pattern",
		}
	}
	res.Text = strings.TrimRight(out.String(), "\n")
	return res
}
