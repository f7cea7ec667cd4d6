package scan

import (
	"bytes"
	"errors"
	"regexp"
	"regexp/syntax"
	"sync"
	"sync/atomic"
)

// Matcher finds the lines of a buffer that match a grep_search pattern. It
// is immutable and shared by the workers of a search.
type Matcher struct {
	// Line verifies a candidate Line (without its newline); nil when every
	// prefilter hit is a match.
	Line *regexp.Regexp
	// pre finds candidate lines; cloned per worker. Nil: every line is a
	// candidate. (Running the regexp line by line is faster than running it
	// over a whole buffer: on short input Go's regexp uses its backtracker
	// rather than its NFA.)
	pre finder
}

// ErrNewlinePattern is returned by compileMatcher for a pattern that
// contains a literal line break.
var ErrNewlinePattern = errors.New("pattern contains a line break")

// CompileMatcher compiles a Go RE2 pattern for line-by-line search.
func CompileMatcher(pattern string, ignoreCase bool) (*Matcher, error) {
	expr := pattern
	if ignoreCase {
		expr = "(?i)" + pattern
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	tree = tree.Simplify()
	if hasNewline(tree) {
		return nil, ErrNewlinePattern
	}
	m := &Matcher{Line: re}
	if f := wordFinder(tree); f != nil {
		m.pre, m.Line = f, nil
		return m, nil
	}
	info := analyze(tree)
	switch {
	case info.exact != nil && !info.assert && !info.exact.loose && info.exact.cost() < 1<<30:
		m.pre, m.Line = newFinder(info.exact), nil
	case info.req != nil && info.req.cost() < 1<<30:
		m.pre = newFinder(info.req)
	}
	return m, nil
}

// wordFinder returns a finder whose hits are exactly the matches of a
// whole-word pattern (\bword\b, \bword, word\b; any case), or nil when tree
// is not one. A literal search with the boundaries checked at each hit saves
// running the regexp on every line that holds the word elsewhere.
func wordFinder(tree *syntax.Regexp) finder {
	if tree.Op != syntax.OpConcat || len(tree.Sub) < 2 || len(tree.Sub) > 3 {
		return nil
	}
	subs := tree.Sub
	before := subs[0].Op == syntax.OpWordBoundary
	if before {
		subs = subs[1:]
	}
	after := len(subs) == 2 && subs[1].Op == syntax.OpWordBoundary
	if after {
		subs = subs[:1]
	}
	if len(subs) != 1 || subs[0].Op != syntax.OpLiteral || !(before || after) {
		return nil
	}
	info := literalInfo(subs[0].Rune, subs[0].Flags&syntax.FoldCase != 0)
	if info.exact == nil || len(info.exact.lits) != 1 || info.exact.lits[0] == "" {
		return nil
	}
	lit := info.exact.lits[0]
	return &boundaryFinder{inner: newFinder(info.exact), n: len(lit), before: before, after: after,
		firstWord: isWordByte(lit[0]), lastWord: isWordByte(lit[len(lit)-1])}
}

// boundaryFinder finds a literal of n bytes with ASCII word boundaries
// (Go's \b) before and/or after it.
type boundaryFinder struct {
	inner               finder
	n                   int
	before, after       bool
	firstWord, lastWord bool
}

func (f *boundaryFinder) find(b []byte, from int) int {
	for {
		h := f.inner.find(b, from)
		if h < 0 {
			return -1
		}
		ok := true
		if f.before {
			ok = (h > 0 && isWordByte(b[h-1])) != f.firstWord
		}
		if ok && f.after {
			e := h + f.n
			ok = (e < len(b) && isWordByte(b[e])) != f.lastWord
		}
		if ok {
			return h
		}
		from = h + 1
	}
}

func (f *boundaryFinder) reset() { f.inner.reset() }
func (f *boundaryFinder) clone() finder {
	c := *f
	c.inner = f.inner.clone()
	return &c
}

// isWordByte reports whether c is an ASCII word character, as Go's \w.
func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// hasNewline reports whether re contains a literal '\n'.
func hasNewline(re *syntax.Regexp) bool {
	if re.Op == syntax.OpLiteral {
		for _, r := range re.Rune {
			if r == '\n' {
				return true
			}
		}
	}
	for _, s := range re.Sub {
		if hasNewline(s) {
			return true
		}
	}
	return false
}

// LineRec is one line of a file's search result: a match or a context line.
type LineRec struct {
	Line  int
	Text  string
	Match bool
}

// Buffer sizes of a searcher. Files are read in chunks of searchBufSize; a
// line longer than that grows the buffer, up to maxSearchLine, beyond which
// the file is skipped.
const (
	searchBufSize = 256 << 10
	maxSearchLine = 64 << 20
	keepSearchBuf = 16 << 20 // a buffer grown past this is dropped after the file
)

// errLineTooLong is returned by search for a file with a line longer than
// maxSearchLine.
var errLineTooLong = errors.New("line too long")

// ErrStopped is returned by search when the search was aborted.
var ErrStopped = errors.New("stopped")

// Searcher searches files one at a time for one matcher. Each worker of a
// search has its own: it owns a read buffer and the state of the current
// file.
type Searcher struct {
	m         *Matcher
	pre       finder
	context   int // lines of context before and after each match
	maxStore  int // match records kept per file; further matches are only counted
	lineChars int
	Stop      *atomic.Bool
	buf       []byte
	bufSize   int // initial size of buf; 0 means searchBufSize

	// Counters over all files, read by the progress reporter.
	Searched atomic.Int64
	Binary   atomic.Int64

	// The current file.
	Recs        []LineRec
	Matches     int // matching lines
	Stored      int // matching lines in recs
	cntPos      int // a line start in buf whose line number is cntLine
	cntLine     int
	lastEmitted int // line number of the last record; 0 none
	afterUntil  int // last line of the pending after-context
	afterPos    int // buf position of line lastEmitted+1 while after-context is pending
}

func NewSearcher(m *Matcher, context, maxStore, lineChars int, stop *atomic.Bool) *Searcher {
	s := &Searcher{m: m, context: context, maxStore: maxStore, lineChars: lineChars, Stop: stop}
	if m.pre != nil {
		s.pre = m.pre.clone()
	}
	return s
}

// Search reads the file open as fd to its end and searches it. On return,
// s.matches counts its matching lines and s.recs holds the first maxStore of
// them with their context, in line order. binary reports a NUL byte: the file
// was not searched to the end and its results are to be dropped.
func (s *Searcher) Search(fd int) (binary bool, err error) {
	size := searchBufSize
	if s.bufSize > 0 {
		size = s.bufSize
	}
	if len(s.buf) == 0 {
		if size == searchBufSize {
			s.buf = *searchBufs.Get().(*[]byte)
		} else {
			s.buf = make([]byte, size)
		}
	}
	defer func() {
		if len(s.buf) > keepSearchBuf {
			s.buf = make([]byte, size) // do not keep a huge buffer for the rest of a walk
		}
	}()
	s.Recs = s.Recs[:0]
	s.Matches, s.Stored = 0, 0
	s.cntPos, s.cntLine = 0, 1
	s.lastEmitted, s.afterUntil, s.afterPos = 0, 0, 0

	n, from := 0, 0 // buf[:n] holds data; lines from `from` on are not searched yet
	for {
		m, eof, err := ReadFull(fd, s.buf[n:])
		if err != nil {
			return false, err
		}
		if bytes.IndexByte(s.buf[n:n+m], 0) >= 0 {
			return true, nil
		}
		n += m
		end := n
		if !eof {
			i := bytes.LastIndexByte(s.buf[from:n], '\n')
			if i < 0 { // no complete line: make room
				if len(s.buf) >= maxSearchLine {
					return false, errLineTooLong
				}
				grown := make([]byte, 2*len(s.buf))
				copy(grown, s.buf[:n])
				s.buf = grown
				continue
			}
			end = from + i + 1
		}
		if s.pre != nil {
			s.pre.reset()
		}
		s.scan(s.buf[:end], from)
		if s.context > 0 {
			s.flushAfter(s.buf[:end], end)
		}
		if eof {
			return false, nil
		}
		if s.Stop.Load() {
			return false, ErrStopped
		}
		keep := s.keepFrom(end)
		if keep >= s.cntPos {
			s.cntLine += bytes.Count(s.buf[s.cntPos:keep], []byte{'\n'})
		} else {
			s.cntLine -= bytes.Count(s.buf[keep:s.cntPos], []byte{'\n'})
		}
		s.cntPos = 0
		s.afterPos -= keep
		n = copy(s.buf, s.buf[keep:n])
		from = end - keep
	}
}

// searchBufs holds read buffers of searchBufSize between searches.
var searchBufs = sync.Pool{New: func() any { b := make([]byte, searchBufSize); return &b }}

// Release returns the searcher's buffer for reuse; the searcher must not be
// used afterwards.
func (s *Searcher) Release() {
	if b := s.buf; len(b) == searchBufSize {
		searchBufs.Put(&b)
	}
	s.buf = nil
}

// keepFrom returns where the data to keep for the next chunk starts: the
// context lines before end.
func (s *Searcher) keepFrom(end int) int {
	p := end
	for i := 0; i < s.context && p > 0; i++ {
		p = bytes.LastIndexByte(s.buf[:p-1], '\n') + 1
	}
	return p
}

// scan searches the complete lines of b from the line start from on.
func (s *Searcher) scan(b []byte, from int) {
	end := len(b)
	for pos := from; pos < end; {
		c := pos
		if s.pre != nil {
			if c = s.pre.find(b, pos); c < 0 {
				return
			}
		}
		ls := pos
		if c > pos {
			ls = pos + bytes.LastIndexByte(b[pos:c], '\n') + 1
		}
		le := end
		if i := bytes.IndexByte(b[c:], '\n'); i >= 0 {
			le = c + i
		}
		if s.m.Line == nil || s.m.Line.Match(b[ls:le]) {
			s.onMatch(b, ls, le)
		}
		pos = le + 1
	}
}

// lineAt returns the number of the line starting at p, which is not before
// the last position asked about.
func (s *Searcher) lineAt(b []byte, p int) int {
	s.cntLine += bytes.Count(b[s.cntPos:p], []byte{'\n'})
	s.cntPos = p
	return s.cntLine
}

func (s *Searcher) onMatch(b []byte, ls, le int) {
	s.Matches++
	if s.Stored == s.maxStore {
		return
	}
	l := s.lineAt(b, ls)
	if s.context > 0 {
		s.flushAfter(b, ls)
		if nb := min(s.context, l-1-s.lastEmitted); nb > 0 {
			var starts [MaxContext]int // starts[i]: start of line l-1-i
			k := 0
			for p := ls; k < nb && p > 0; k++ {
				p = bytes.LastIndexByte(b[:p-1], '\n') + 1
				starts[k] = p
			}
			for i := k - 1; i >= 0; i-- {
				end := ls - 1
				if i > 0 {
					end = starts[i-1] - 1
				}
				s.emit(l-1-i, b[starts[i]:end], false)
			}
		}
		s.afterUntil, s.afterPos = l+s.context, le+1
	}
	s.emit(l, b[ls:le], true)
	s.Stored++
	s.lastEmitted = l
}

// flushAfter records the pending after-context lines that start before
// limit.
func (s *Searcher) flushAfter(b []byte, limit int) {
	for s.lastEmitted < s.afterUntil && s.afterPos < limit {
		le := limit
		if i := bytes.IndexByte(b[s.afterPos:limit], '\n'); i >= 0 {
			le = s.afterPos + i
		}
		s.emit(s.lastEmitted+1, b[s.afterPos:le], false)
		s.lastEmitted++
		s.afterPos = le + 1
	}
}

func (s *Searcher) emit(line int, text []byte, match bool) {
	t, _, _ := CutLine(text, len(text), s.lineChars)
	s.Recs = append(s.Recs, LineRec{Line: line, Text: t, Match: match})
}
