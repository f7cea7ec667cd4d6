package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// clipSlow is Clip without its no-copy path: what Clip returned before.
func clipSlow(s string, n int) string {
	b := make([]rune, 0, min(len(s), n+1))
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		b = append(b, r)
		if len(b) > n {
			break
		}
	}
	if len(b) > n || utf8.RuneCountInString(s) > n {
		return string(b[:max(n-1, 0)]) + "…"
	}
	return string(b)
}

// Clip returns what it always did, whether or not it can return s itself.
func TestClipNoCopyPath(t *testing.T) {
	ins := []string{"", "a", "plan", "two\nlines", "tab\there", "cr\r", "é€😀", "bad \xff byte", "\xc3", strings.Repeat("x", 60), strings.Repeat("é", 61), strings.Repeat("y", 200)}
	for _, s := range ins {
		for _, n := range []int{0, 1, 3, 59, 60, 61, 100} {
			if got, want := Clip(s, n), clipSlow(s, n); got != want {
				t.Errorf("Clip(%q, %d) = %q, want %q", s, n, got, want)
			}
		}
	}
	if a := testing.AllocsPerRun(100, func() { _ = Clip("a short thought", 60) }); a != 0 {
		t.Errorf("Clip of a line that needs no change allocated %v times", a)
	}
}
