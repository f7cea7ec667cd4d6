package scan

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// naiveGrep is the reference grep_search semantics for one file: every line
// matched with the regexp; the first maxStore matching lines kept, each with
// ctx lines of context before and after.
func naiveGrep(content string, re *regexp.Regexp, ctx, maxStore, lineChars int) (recs []LineRec, matches int) {
	if content == "" {
		return nil, 0
	}
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	show := map[int]bool{}
	stored := map[int]bool{}
	for i, l := range lines {
		if !re.MatchString(l) {
			continue
		}
		matches++
		if len(stored) == maxStore {
			continue
		}
		stored[i] = true
		for j := max(0, i-ctx); j <= min(len(lines)-1, i+ctx); j++ {
			show[j] = true
		}
	}
	for i, l := range lines {
		if show[i] {
			t, _, _ := CutLine([]byte(l), len(l), lineChars)
			recs = append(recs, LineRec{Line: i + 1, Text: t, Match: stored[i]})
		}
	}
	return recs, matches
}

// searchString runs a searcher over content.
func searchString(t *testing.T, s *Searcher, content string) (recs []LineRec, matches int, binary bool) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return searchPath(t, s, p)
}

// searchPath runs a searcher over the file p.
func searchPath(t *testing.T, s *Searcher, p string) (recs []LineRec, matches int, binary bool) {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	binary, err = s.Search(fd)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(s.Recs), s.Matches, binary
}

var searchWords = []string{
	"foo", "bar", "Foo", "FOO", "fOo", "baz", "x", "", " ", "K", "k", "\u212a", "s", "S", "\u017f",
	"func", "main", "(", ")", "é", "É", "\xff", "http.Request", "HTTP", "request", "-", "_", "\t", "\r",
}

func randomContent(r *rand.Rand, lines int) string {
	var b strings.Builder
	for range lines {
		n := r.IntN(8)
		if r.IntN(50) == 0 {
			n = 200 + r.IntN(300) // a long line
		}
		for range n {
			b.WriteString(searchWords[r.IntN(len(searchWords))])
		}
		b.WriteByte('\n')
	}
	s := b.String()
	if r.IntN(2) == 0 {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

var searchPatterns = []struct {
	pattern    string
	ignoreCase bool
}{
	{"foo", false},
	{"foo", true},
	{"Foo", false},
	{"k", true},
	{"s", true},
	{"ks|sk", true},
	{"foobar", false},
	{"foo|bar", false},
	{"foo|baz|x", true},
	{"(foo|bar)baz", false},
	{"http.request", true},
	{`func \w*\(`, false},
	{"^foo", false},
	{"foo$", false},
	{`\bfoo\b`, false},
	{`\bfoo\b`, true},
	{`\bfoo`, false},
	{`o\b`, false},
	{`\b_-`, false},
	{`\bk\b`, true},
	{`\Afoo`, false},
	{`bar\z`, false},
	{"x*", false},
	{"[Ff]oo", false},
	{"é", true},
	{"É", false},
	{"\uFFFD", false},
	{"[^a-z]", false},
	{`\s+main`, false},
	{"fo+", true},
	{"(?i)FOO", false},
	{"a{0}foo", false},
	{"main\\b|^$", false},
	{"_-", false},
	{`\t`, true},
}

// TestSearchMatchesReference compares the searcher with the naive line by
// line regexp on random files, with buffers small enough to cut files into
// many chunks and lines longer than the buffer.
func TestSearchMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	contents := []string{"", "\n", "foo", "foo\n", "\n\nfoo\n\n", "x\nfoo\nx\nx\nfoo"}
	for range 12 {
		contents = append(contents, randomContent(r, 1+r.IntN(400)))
	}
	dir := t.TempDir()
	paths := make([]string, len(contents))
	for i, c := range contents {
		paths[i] = filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(paths[i], []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range searchPatterns {
		t.Run(fmt.Sprintf("%q/i=%v", p.pattern, p.ignoreCase), func(t *testing.T) {
			expr := p.pattern
			if p.ignoreCase {
				expr = "(?i)" + expr
			}
			re := regexp.MustCompile(expr)
			m, err := CompileMatcher(p.pattern, p.ignoreCase)
			if err != nil {
				t.Fatal(err)
			}
			for _, ctx := range []int{0, 1, 3} {
				for _, maxStore := range []int{2, 1 << 20} {
					wants := make([][]LineRec, len(contents))
					wantNs := make([]int, len(contents))
					for i, c := range contents {
						wants[i], wantNs[i] = naiveGrep(c, re, ctx, maxStore, 40)
					}
					for _, bufSize := range []int{16, 100, searchBufSize} {
						var stop atomic.Bool
						s := NewSearcher(m, ctx, maxStore, 40, &stop)
						s.bufSize = bufSize
						for i, c := range contents {
							got, gotN, binary := searchPath(t, s, paths[i])
							if binary || gotN != wantNs[i] || !slices.Equal(got, wants[i]) {
								t.Fatalf("ctx=%d buf=%d max=%d content %d (%q...): got %d matches (binary %v)\n%v\nwant %d\n%v",
									ctx, bufSize, maxStore, i, c[:min(len(c), 80)], gotN, binary, got, wantNs[i], wants[i])
							}
						}
					}
				}
			}
		})
	}
}

func TestSearchBinary(t *testing.T) {
	m, err := CompileMatcher("foo", false)
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	s := NewSearcher(m, 0, 10, 100, &stop)
	s.bufSize = 64
	content := strings.Repeat("foo line\n", 40) + "\x00" + "foo\n"
	if _, _, binary := searchString(t, s, content); !binary {
		t.Error("a NUL after the first chunk was not detected")
	}
	if _, n, binary := searchString(t, s, "foo\nfoo\n"); binary || n != 2 {
		t.Errorf("the searcher kept state from a binary file: %d matches, binary %v", n, binary)
	}
}

func TestSearchLineTooLong(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MiB file")
	}
	m, _ := CompileMatcher("foo", false)
	var stop atomic.Bool
	s := NewSearcher(m, 0, 10, 100, &stop)
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", maxSearchLine+10)+"\nfoo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := s.Search(fd); err != errLineTooLong {
		t.Errorf("err = %v, want errLineTooLong", err)
	}
	if len(s.buf) > keepSearchBuf {
		t.Errorf("the searcher kept a %d byte buffer", len(s.buf))
	}
}

func TestAnalyze(t *testing.T) {
	tests := []struct {
		pattern   string
		wantLits  []string // the prefilter's literals; nil: no prefilter
		wantFold  bool
		wantExact bool // a prefilter hit is a match
	}{
		{"func main", []string{"func main"}, false, true},
		{`func \w+\(ctx context`, []string{"(ctx context"}, false, false},
		{"(?i)http.request", []string{"reque"}, true, false},
		{"(?i)hello", []string{"hello"}, true, true},
		{"(?i)kelvin", []string{"elvin"}, true, false},
		{"foo|bar", []string{"foo", "bar"}, false, true},
		{"foo|far|bar", []string{"foo", "far", "bar"}, false, true},
		{"(?i)ab|cd", []string{"ab", "cd"}, true, true},
		{`\bfoo\b`, []string{"foo"}, false, true},
		{`\bfoo\b|bar`, []string{"foo", "bar"}, false, false},
		{"^package ", []string{"package "}, false, false},
		{"[Ff]oo", []string{"foo"}, true, false}, // the parser makes [Ff] a folded F
		{"[Ff]oo|bar", []string{"foo", "bar"}, true, false},
		{"[-_]id", []string{"-id", "_id"}, false, true},
		{"x+yz", []string{"yz"}, false, false},
		{"a*", nil, false, false},
		{`[A-Z][a-z]+[0-9]{3}`, nil, false, false},
		{"\uFFFD", nil, false, false},
		{"foo|.*", nil, false, false},
		{"(?i)é", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			m, err := CompileMatcher(tt.pattern, false)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantLits == nil {
				if m.pre != nil {
					t.Errorf("prefilter %+v, want none", m.pre)
				}
				return
			}
			lits, fold := finderLits(m.pre)
			if !slices.Equal(lits, tt.wantLits) || fold != tt.wantFold {
				t.Errorf("prefilter %q fold=%v, want %q fold=%v", lits, fold, tt.wantLits, tt.wantFold)
			}
			if exact := m.Line == nil; exact != tt.wantExact {
				t.Errorf("exact = %v, want %v", exact, tt.wantExact)
			}
		})
	}
}

func finderLits(f finder) (lits []string, fold bool) {
	switch f := f.(type) {
	case *litFinder:
		return []string{string(f.lit)}, f.fold
	case *foldFinder:
		return []string{string(f.lit)}, true
	case *boundaryFinder:
		return finderLits(f.inner)
	case *multiFinder:
		for _, s := range f.subs {
			l, fo := finderLits(s)
			lits = append(lits, l...)
			fold = fold || fo
		}
	}
	return lits, fold
}

// TestFoldSafe checks which runes case folding keeps within ASCII.
func TestFoldSafe(t *testing.T) {
	for r := rune(0); r < 128; r++ {
		want := r != 'k' && r != 'K' && r != 's' && r != 'S'
		if got := foldSafe(r); got != want {
			t.Errorf("foldSafe(%q) = %v, want %v", r, got, want)
		}
	}
	for _, r := range []rune{'é', 'É', '\u212a', '\u017f', 'ß'} {
		if foldSafe(r) {
			t.Errorf("foldSafe(%q) = true", r)
		}
	}
	if !foldSafe('中') {
		t.Error("a rune without case is safe")
	}
}

func TestCompileMatcherErrors(t *testing.T) {
	if _, err := CompileMatcher("a(b", false); err == nil {
		t.Error("a bad pattern compiled")
	}
	if _, err := CompileMatcher(`foo\nbar`, false); err != ErrNewlinePattern {
		t.Errorf("err = %v, want errNewlinePattern", err)
	}
	// The analysis must not break on any parse tree.
	for _, p := range []string{`(?s).`, `\pL+`, `[[:alpha:]]`, `(?U)a+?`, `a{2,5}`, `(a|b)*c`, `(?:)`, `$`} {
		if _, err := CompileMatcher(p, true); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
}
