package scan

import (
	"bytes"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Literal prefilters for grep_search.
//
// Go's regexp has no DFA, so running it over every byte of a tree is slow.
// Instead the pattern's syntax tree is analyzed for literals: a set of
// strings at least one of which occurs in every match ("func " or
// "(ctx context" for `func \w+\(ctx context`; "foo" or "bar" for
// `foo|bar`). A finder locates those with bytes.IndexByte (SIMD) on the
// literal's rarest byte and a comparison around it; only the lines holding a
// hit are handed to the regexp. When the pattern is nothing but literals, a
// hit is a match and the regexp is not run at all.
//
// Case-insensitive literals are found through their rarest letter in both
// cases (two IndexByte scans) and compared ASCII-case-insensitively. Go
// folds case by Unicode simple folding, under which k and s also match the
// Kelvin sign and the long s (multi-byte runes), and non-ASCII letters have
// other encodings in other cases: a literal is cut at such runes into pieces
// that can be compared byte by byte, and the regexp verifies the line.

// byteRank ranks how common each byte is in source code and prose, from 0,
// the rarest, to 255, the most common. It was measured on a mix of Go, C
// headers, Python, Perl and documentation (about 100 MB).
var byteRank = [256]uint8{
	0, 54, 1, 2, 3, 4, 5, 60, 6, 241, 248, 7, 78, 61, 8, 9,
	10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
	255, 171, 209, 200, 181, 168, 170, 199, 234, 233, 212, 172, 236, 201, 228, 217,
	235, 219, 211, 198, 195, 202, 196, 186, 191, 197, 208, 190, 176, 210, 185, 158,
	164, 227, 194, 223, 207, 232, 205, 189, 184, 225, 165, 180, 220, 204, 221, 224,
	214, 166, 222, 238, 229, 187, 183, 174, 188, 177, 162, 179, 182, 178, 160, 247,
	163, 246, 213, 244, 242, 254, 240, 226, 231, 249, 169, 215, 243, 230, 252, 245,
	239, 173, 250, 251, 253, 237, 206, 203, 218, 216, 175, 193, 167, 192, 157, 26,
	155, 149, 154, 93, 117, 129, 130, 97, 152, 140, 114, 118, 136, 67, 79, 70,
	131, 100, 106, 124, 153, 151, 108, 144, 143, 145, 86, 80, 146, 147, 122, 123,
	101, 105, 89, 83, 139, 127, 116, 141, 92, 98, 132, 128, 126, 94, 76, 75,
	85, 142, 134, 121, 91, 109, 110, 159, 119, 125, 112, 138, 115, 113, 77, 104,
	27, 28, 161, 150, 81, 71, 29, 55, 30, 31, 88, 95, 102, 72, 148, 133,
	87, 84, 47, 63, 32, 33, 69, 62, 111, 120, 50, 64, 68, 48, 58, 59,
	65, 82, 156, 103, 96, 73, 137, 90, 107, 66, 74, 51, 56, 52, 49, 99,
	135, 34, 35, 36, 53, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 57,
}

// litSet is a set of literals; fold means they match ASCII-case-insensitively.
// A loose set was widened to fold some literals that were case-sensitive:
// its hits are candidates, never matches on their own.
type litSet struct {
	lits  []string
	fold  bool
	loose bool
}

// maxLits bounds the size of a literal set (alternatives, cross products).
const maxLits = 16

// litInfo is what the analysis knows about a regexp node.
type litInfo struct {
	// exact, when not nil, is the set of all strings the node matches.
	exact *litSet
	// req, when not nil, is a set one of which every match contains.
	req *litSet
	// assert reports zero-width assertions (^, $, \b...) in the node, which
	// a literal hit does not check.
	assert bool
}

// analyze computes the literal information of a simplified regexp.
func analyze(re *syntax.Regexp) litInfo {
	switch re.Op {
	case syntax.OpLiteral:
		return literalInfo(re.Rune, re.Flags&syntax.FoldCase != 0)
	case syntax.OpEmptyMatch:
		return litInfo{exact: &litSet{lits: []string{""}}}
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return litInfo{exact: &litSet{lits: []string{""}}, assert: true}
	case syntax.OpCapture:
		return analyze(re.Sub[0])
	case syntax.OpPlus:
		in := analyze(re.Sub[0])
		return litInfo{req: orExact(in), assert: in.assert}
	case syntax.OpRepeat:
		in := analyze(re.Sub[0])
		if re.Min >= 1 {
			return litInfo{req: orExact(in), assert: in.assert}
		}
		return litInfo{assert: in.assert}
	case syntax.OpStar, syntax.OpQuest:
		return litInfo{assert: analyze(re.Sub[0]).assert}
	case syntax.OpCharClass:
		return classInfo(re)
	case syntax.OpConcat:
		return concatInfo(re.Sub)
	case syntax.OpAlternate:
		return alternateInfo(re.Sub)
	}
	return litInfo{}
}

func orExact(in litInfo) *litSet {
	if in.req != nil {
		return in.req
	}
	return in.exact
}

// foldSafe reports whether a rune under case folding can be compared byte
// by byte with ASCII case folding: all its case variants are ASCII, or it
// has none.
func foldSafe(r rune) bool {
	if r == utf8.RuneError {
		return false
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf || r >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func literalInfo(runes []rune, fold bool) litInfo {
	if !fold {
		if slices.Contains(runes, utf8.RuneError) {
			// U+FFFD in a pattern also matches invalid UTF-8 bytes.
			return litInfo{}
		}
		s := &litSet{lits: []string{string(runes)}}
		return litInfo{exact: s, req: s}
	}
	// Cut at runes that cannot be compared byte by byte.
	var pieces []string
	start := 0
	for i, r := range runes {
		if !foldSafe(r) {
			if i > start {
				pieces = append(pieces, string(runes[start:i]))
			}
			start = i + 1
		}
	}
	if start == 0 {
		s := &litSet{lits: []string{strings.ToLower(string(runes))}, fold: true}
		return litInfo{exact: s, req: s}
	}
	if start < len(runes) {
		pieces = append(pieces, string(runes[start:]))
	}
	var best *litSet
	for _, p := range pieces {
		best = better(best, &litSet{lits: []string{strings.ToLower(p)}, fold: true})
	}
	return litInfo{req: best}
}

// classInfo turns a small character class ([Ff], [-_]) into a literal set.
func classInfo(re *syntax.Regexp) litInfo {
	var lits []string
	for i := 0; i+1 < len(re.Rune); i += 2 {
		for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
			if len(lits) == maxLits/2 || r == utf8.RuneError {
				return litInfo{}
			}
			lits = append(lits, string(r))
		}
	}
	if len(lits) == 0 {
		return litInfo{}
	}
	s := &litSet{lits: lits}
	return litInfo{exact: s, req: s}
}

func concatInfo(subs []*syntax.Regexp) litInfo {
	var (
		out    litInfo
		best   *litSet
		run    = &litSet{lits: []string{""}}
		broken bool
	)
	for _, sub := range subs {
		in := analyze(sub)
		out.assert = out.assert || in.assert
		if joined := cross(run, in.exact); joined != nil {
			run = joined
			continue
		}
		best = better(best, run)
		broken = true
		if in.exact != nil {
			run = in.exact
		} else {
			run = &litSet{lits: []string{""}}
		}
		best = better(best, in.req)
	}
	best = better(best, run)
	if !broken {
		out.exact = run
	}
	out.req = best
	return out
}

// cross returns the concatenations of every string of a with every string
// of b, or nil when b is unknown or the result would be too large. When a
// and b fold differently, the result folds and is loose.
func cross(a, b *litSet) *litSet {
	if b == nil || len(a.lits)*len(b.lits) > maxLits {
		return nil
	}
	out := &litSet{fold: a.fold || b.fold, loose: a.loose || b.loose}
	if a.fold != b.fold && !allEmpty(a) && !allEmpty(b) {
		out.loose = true
	}
	for _, x := range a.lits {
		for _, y := range b.lits {
			out.lits = append(out.lits, x+y)
		}
	}
	if out.fold {
		for i, l := range out.lits {
			out.lits[i] = strings.ToLower(l)
		}
	}
	return out
}

func allEmpty(s *litSet) bool {
	for _, l := range s.lits {
		if l != "" {
			return false
		}
	}
	return true
}

func alternateInfo(subs []*syntax.Regexp) litInfo {
	var (
		out          litInfo
		exact, req   = &litSet{}, &litSet{}
		exactOK, rOK = true, true
	)
	for i, sub := range subs {
		in := analyze(sub)
		out.assert = out.assert || in.assert
		exactOK = exactOK && union(exact, in.exact, i == 0)
		rOK = rOK && union(req, orExact(in), i == 0)
	}
	if exactOK {
		out.exact = exact
	}
	if rOK {
		out.req = req
	}
	return out
}

// union adds the strings of b to a; it reports false when it cannot. When
// a and b fold differently, a folds and is loose.
func union(a, b *litSet, first bool) bool {
	if b == nil || len(a.lits)+len(b.lits) > maxLits {
		return false
	}
	switch {
	case first:
		a.fold, a.loose = b.fold, b.loose
	case a.fold != b.fold:
		a.fold, a.loose = true, true
	default:
		a.loose = a.loose || b.loose
	}
	a.lits = append(a.lits, b.lits...)
	if a.fold {
		for i, l := range a.lits {
			a.lits[i] = strings.ToLower(l)
		}
	}
	return true
}

// cost estimates how many false candidates a literal set lets through:
// lower is better. A set is as weak as its weakest member; an empty member
// makes it useless.
func (s *litSet) cost() int {
	worst := -1 << 30
	for _, l := range s.lits {
		if l == "" {
			return 1 << 30
		}
		_, r := Anchor(l, s.fold)
		worst = max(worst, r-4*min(len(l), 8))
	}
	return worst + 8*(len(s.lits)-1)
}

// better returns the better of two candidate sets (nil is no candidate).
func better(a, b *litSet) *litSet {
	switch {
	case b == nil || b.cost() >= 1<<30:
		return a
	case a == nil || a.cost() >= 1<<30:
		return b
	case b.cost() < a.cost():
		return b
	}
	return a
}

// Anchor picks the byte of l to search for: the rarest, counting both cases
// of a letter when fold. It returns its index and its effective rank.
func Anchor(l string, fold bool) (idx, rank int) {
	rank = 1 << 10
	for i := 0; i < len(l); i++ {
		c := l[i]
		r := int(byteRank[c])
		if fold && isASCIILetter(c) {
			r = max(int(byteRank[c|0x20]), int(byteRank[c&^0x20])) + 8
		}
		if r < rank {
			idx, rank = i, r
		}
	}
	return idx, rank
}

func isASCIILetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// finder locates literal hits in a buffer. A finder is used by one goroutine;
// clone makes one for another.
type finder interface {
	// find returns the position of the first hit in b at or after from, or
	// -1. Successive calls between resets have non-decreasing from and the
	// same b.
	find(b []byte, from int) int
	// reset forgets what find cached about the previous buffer.
	reset()
	clone() finder
}

// newFinder returns a finder for the set s.
func newFinder(s *litSet) finder {
	fs := make([]finder, len(s.lits))
	for i, l := range s.lits {
		k, _ := Anchor(l, s.fold)
		if s.fold && isASCIILetter(l[k]) {
			fs[i] = &foldFinder{lit: []byte(l), k: k, lo: l[k] | 0x20, up: l[k] &^ 0x20}
		} else {
			fs[i] = &litFinder{lit: []byte(l), k: k, fold: s.fold}
		}
	}
	if len(fs) == 1 {
		return fs[0]
	}
	return &multiFinder{subs: fs, next: make([]int, len(fs))}
}

// litFinder finds a literal through one anchor byte that has no other case.
type litFinder struct {
	lit  []byte
	k    int // index of the anchor byte in lit
	fold bool
}

func (f *litFinder) find(b []byte, from int) int {
	c, n := f.lit[f.k], len(f.lit)
	for p := from + f.k; p < len(b); {
		i := bytes.IndexByte(b[p:], c)
		if i < 0 {
			return -1
		}
		s := p + i - f.k
		if s+n > len(b) {
			return -1
		}
		if f.fold {
			if equalFoldASCII(b[s:s+n], f.lit) {
				return s
			}
		} else if bytes.Equal(b[s:s+n], f.lit) {
			return s
		}
		p += i + 1
	}
	return -1
}

func (f *litFinder) reset()        {}
func (f *litFinder) clone() finder { return f }

// foldFinder finds a case-insensitive literal through an anchor letter,
// scanning for its lower and upper case separately.
type foldFinder struct {
	lit    []byte // lower case
	k      int
	lo, up byte
	// next positions of lo and up at or after the last from; -1 none, -2
	// unknown.
	nlo, nup int
}

func (f *foldFinder) find(b []byte, from int) int {
	n := len(f.lit)
	for p := from + f.k; p < len(b); {
		if f.nlo != -1 && f.nlo < p {
			f.nlo = indexFrom(b, p, f.lo)
		}
		if f.nup != -1 && f.nup < p {
			f.nup = indexFrom(b, p, f.up)
		}
		q := f.nlo
		if q < 0 || (f.nup >= 0 && f.nup < q) {
			q = f.nup
		}
		if q < 0 {
			return -1
		}
		s := q - f.k
		if s+n > len(b) {
			return -1
		}
		if equalFoldASCII(b[s:s+n], f.lit) {
			return s
		}
		p = q + 1
	}
	return -1
}

func indexFrom(b []byte, from int, c byte) int {
	if i := bytes.IndexByte(b[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

func (f *foldFinder) reset() { f.nlo, f.nup = -2, -2 }
func (f *foldFinder) clone() finder {
	c := *f
	c.reset()
	return &c
}

// equalFoldASCII reports whether b equals lit (lower case) with ASCII
// letters compared case-insensitively and every other byte exactly.
func equalFoldASCII(b, lit []byte) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c |= 0x20
		}
		if c != lit[i] {
			return false
		}
	}
	return true
}

// multiFinder finds the first hit of any of several literals, remembering
// each one's next hit.
type multiFinder struct {
	subs []finder
	next []int // per sub: next hit at or after the last from; -1 none, -2 unknown
}

func (f *multiFinder) find(b []byte, from int) int {
	best := -1
	for i, s := range f.subs {
		if f.next[i] == -1 {
			continue
		}
		if f.next[i] < from {
			f.next[i] = s.find(b, from)
		}
		if n := f.next[i]; n >= 0 && (best < 0 || n < best) {
			best = n
		}
	}
	return best
}

func (f *multiFinder) reset() {
	for i, s := range f.subs {
		f.next[i] = -2
		s.reset()
	}
}

func (f *multiFinder) clone() finder {
	c := &multiFinder{subs: make([]finder, len(f.subs)), next: make([]int, len(f.next))}
	for i, s := range f.subs {
		c.subs[i] = s.clone()
	}
	c.reset()
	return c
}
