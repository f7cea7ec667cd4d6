package fileops

import (
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// Diffs are computed with go-udiff, a copy of the diff package of gopls
// (golang.org/x/tools/internal/diff) with its symbols exported: unified
// diffs as diff -u and patch(1) read them, from a Myers LCS whose search
// depth is bounded, so a diff of two large, very different files costs
// bounded time instead of quadratic.

// diffContext is the number of unchanged lines around each hunk.
const diffContext = 3

// maxDiffEdits bounds the replacements a diff shows: placing each costs a
// pass over the file.
const maxDiffEdits = 50

// diffStat counts the lines a diff adds and removes.
type diffStat struct {
	added, removed int
}

// String renders the stat as "+3 -1".
func (s diffStat) String() string { return fmt.Sprintf("+%d -%d", s.added, s.removed) }

// unifiedDiff returns the unified diff that turns before into after, for
// the file named label, and its line counts. edits, when not nil, are the
// changes (byte offsets in before), as an edit knows them; otherwise they
// are computed line by line. created marks a new file (from /dev/null). The
// text is valid UTF-8 (invalid bytes replaced), for the wire.
func unifiedDiff(label, before, after string, edits []udiff.Edit, created bool) (string, diffStat) {
	if edits == nil {
		edits = udiff.Lines(before, after)
	} else {
		edits = refineEdits(before, edits)
	}
	from, to := "a/"+label, "b/"+label
	if created {
		from = "/dev/null"
	}
	u, err := udiff.ToUnifiedDiff(from, to, before, edits, diffContext)
	if err != nil {
		// The edits do not fit before: a bug. Fall back to a line diff.
		u, _ = udiff.ToUnifiedDiff(from, to, before, udiff.Lines(before, after), diffContext)
	}
	var st diffStat
	for _, h := range u.Hunks {
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Insert:
				st.added++
			case udiff.Delete:
				st.removed++
			}
		}
	}
	return scan.ValidText([]byte(u.String())), st
}

// capDiff cuts a diff to at most max bytes at a line boundary, and says so.
func capDiff(diff string, max int) (string, bool) {
	if len(diff) <= max {
		return diff, false
	}
	cut := strings.LastIndexByte(diff[:max], '\n') + 1
	rest := strings.Count(diff[cut:], "\n")
	return diff[:cut] + fmt.Sprintf("[diff cut: %s more]\n", plural(rest, "line", "lines")), true
}

// refineEdits turns replacements (sorted, not overlapping) into line edits:
// each is widened to the whole lines it touches, replacements that share a
// line are merged, and the lines of each region are diffed, so that lines a
// replacement leaves as they were show as context, not as removed and
// added again.
func refineEdits(before string, edits []udiff.Edit) []udiff.Edit {
	var (
		out    []udiff.Edit
		region strings.Builder
	)
	for i := 0; i < len(edits); {
		start := strings.LastIndexByte(before[:edits[i].Start], '\n') + 1
		end := lineEnd(before, edits[i].End)
		j := i + 1
		for {
			for j < len(edits) && edits[j].Start < end {
				end = lineEnd(before, edits[j].End)
				j++
			}
			region.Reset()
			prev := start
			for _, e := range edits[i:j] {
				region.WriteString(before[prev:e.Start])
				region.WriteString(e.New)
				prev = e.End
			}
			region.WriteString(before[prev:end])
			// A region must end at a line break on both sides: when the
			// replacement leaves its last line open, take in the next.
			if end == len(before) || strings.HasSuffix(region.String(), "\n") || region.Len() == 0 {
				break
			}
			end = lineEnd(before, end+1)
		}
		for _, e := range udiff.Lines(before[start:end], region.String()) {
			out = append(out, udiff.Edit{Start: start + e.Start, End: start + e.End, New: e.New})
		}
		i = j
	}
	return out
}

// lineEnd returns the offset after the line break that ends the line
// holding offset pos of s (len(s) without one); pos itself when it starts a
// line.
func lineEnd(s string, pos int) int {
	if pos == 0 || pos >= len(s) || s[pos-1] == '\n' {
		return min(pos, len(s))
	}
	if i := strings.IndexByte(s[pos:], '\n'); i >= 0 {
		return pos + i + 1
	}
	return len(s)
}
