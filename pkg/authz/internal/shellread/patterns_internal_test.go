package shellread

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzWordGlobLiteral checks the comparison path of a word glob against
// the regexp it replaced: for any pattern and word, Match answers as the
// pattern's compiled regexp does.
func FuzzWordGlobLiteral(f *testing.F) {
	for _, s := range [][2]string{
		{"git", "git"}, {"git", "Git"}, {"rm|rmdir", "rmdir"}, {"rm|rmdir", "rm|rmdir"},
		{"a|", ""}, {"x.y", "xzy"}, {"x.y", "x.y"}, {"a+b", "aab"}, {"é", "é"},
		{"curl", "curl\n"}, {"(a)", "a"}, {"a*", "abc"}, {`a\|b`, "a|b"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, word string) {
		g, err := CompileWordGlob(pattern)
		if pattern == "" {
			if err == nil {
				t.Fatal("an empty pattern compiled")
			}
			return
		}
		var alts []string
		for _, alt := range SplitUnescaped(pattern, '|') {
			re, rerr := globRegexp(alt)
			if rerr != nil {
				if err == nil {
					t.Fatalf("%q compiled, its alternative %q does not: %v", pattern, alt, rerr)
				}
				return
			}
			alts = append(alts, re)
		}
		re, rerr := regexp.Compile("^(?:" + strings.Join(alts, "|") + ")$")
		if (err == nil) != (rerr == nil) {
			t.Fatalf("%q: error %v, the regexp's %v", pattern, err, rerr)
		}
		if err != nil {
			return
		}
		if g.re == nil && !allLiteral(SplitUnescaped(pattern, '|')) {
			t.Fatalf("%q matched by comparison", pattern)
		}
		if got, want := g.Match(word), re.MatchString(word); got != want {
			t.Fatalf("%q ~ %q: %v, the regexp says %v", pattern, word, got, want)
		}
	})
}
