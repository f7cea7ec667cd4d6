package fileops

import (
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"regexp"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/toold/toold/pkg/errdefs"
)

// The text matching of edit_file: exact, with line endings adapted, and
// errors that show the model the real text when its old_string is off.

// editPlan is an edit applied to a file's content in memory.
type editPlan struct {
	after string
	// edits are the replacements, in the original content's byte offsets.
	edits []udiff.Edit
	// lines are the 1-based lines where the replacements start.
	lines []int
}

// lineEnding returns the line ending most of text's lines use: "\r\n" or
// "\n" (also for text without line breaks).
func lineEnding(text string) string {
	crlf := strings.Count(text, "\r\n")
	if crlf > 0 && crlf >= strings.Count(text, "\n")-crlf {
		return "\r\n"
	}
	return "\n"
}

// withEnding returns s with its line breaks written as eol.
func withEnding(s, eol string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if eol == "\r\n" {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// findAll returns the offsets of the non-overlapping occurrences of sub in
// s, from the left.
func findAll(s, sub string) []int {
	if sub == "" {
		return nil
	}
	var at []int
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + len(sub)
	}
}

// maxListedLines bounds the line numbers an error lists.
const maxListedLines = 20

// planEdit replaces oldS, which is not empty, by newS in before. oldS must
// occur exactly once unless all. Line endings follow the file: when oldS is
// not found as given, it is tried with the file's line ending, and the line
// breaks of newS are written like those of the text it replaces. A file
// that ended with a newline still does. name is for messages.
func planEdit(name, before, oldS, newS string, all bool) (*editPlan, error) {
	eol := lineEnding(before)
	old := oldS
	at := findAll(before, old)
	if len(at) == 0 {
		if alt := withEnding(old, eol); alt != old {
			if at = findAll(before, alt); len(at) > 0 {
				old = alt
			}
		}
	}
	if len(at) == 0 {
		return nil, notFound(name, before, oldS)
	}
	// The replacement's line breaks take the matched text's line ending
	// (the file's, when the matched text has no line break).
	if strings.Contains(old, "\n") {
		eol = "\n"
		if strings.Contains(old, "\r\n") {
			eol = "\r\n"
		}
	}
	repl := withEnding(newS, eol)
	lines := make([]int, len(at))
	line, from := 1, 0
	for i, a := range at {
		line += strings.Count(before[from:a], "\n")
		from = a
		lines[i] = line
	}
	if len(at) > 1 && !all {
		return nil, errdefs.Failed("old_string occurs %d times in %s (at %s); an edit must match exactly one place. "+
			"Include more of the surrounding lines in old_string to make it unique, or set replace_all to true to replace every occurrence.",
			len(at), name, listLines(lines))
	}
	p := &editPlan{lines: lines, edits: make([]udiff.Edit, len(at))}
	var b strings.Builder
	b.Grow(len(before) + len(at)*(len(repl)-len(old)))
	prev := 0
	for i, a := range at {
		b.WriteString(before[prev:a])
		b.WriteString(repl)
		prev = a + len(old)
		p.edits[i] = udiff.Edit{Start: a, End: prev, New: repl}
	}
	b.WriteString(before[prev:])
	p.after = b.String()
	// Keep the final newline when the last replacement took it away.
	if strings.HasSuffix(before, "\n") && p.after != "" && !strings.HasSuffix(p.after, "\n") {
		end := "\n"
		if strings.HasSuffix(before, "\r\n") {
			end = "\r\n"
		}
		p.after += end
		p.edits[len(p.edits)-1].New += end
	}
	return p, nil
}

// listLines renders line numbers for a message: "line 4", "lines 4, 18 and
// 40", at most maxListedLines of them.
func listLines(lines []int) string {
	if len(lines) == 1 {
		return fmt.Sprintf("line %d", lines[0])
	}
	var parts []string
	for i, l := range lines {
		if i == maxListedLines {
			parts = append(parts, fmt.Sprintf("%d more", len(lines)-i))
			break
		}
		parts = append(parts, fmt.Sprint(l))
	}
	last := len(parts) - 1
	return "lines " + strings.Join(parts[:last], ", ") + " and " + parts[last]
}

// Bounds of the closest-match search.
const (
	minSimilarity   = 0.5 // below it, lines are not shown as a match
	anchorCandidate = 20  // windows tried per anchor line
	maxShownMatch   = 30  // lines of a match shown
	shownLineChars  = 300 // characters of a line shown
)

// lineNumberPrefix matches a line as read_file prints it: number, tab.
var lineNumberPrefix = regexp.MustCompile(`^\s*\d+\t`)

// notFound is the error of an old_string that is not in the file. It shows
// the lines most similar to old_string, numbered, and says what differs
// when it can tell (whitespace, indentation, line numbers copied along).
func notFound(name, text, old string) error {
	var msg strings.Builder
	fmt.Fprintf(&msg, "old_string was not found in %s.", name)
	oldLines := splitLines(old)
	if hint := oldStringHint(old, oldLines); hint != "" {
		msg.WriteString(" " + hint)
	}
	fileLines := splitLines(text)
	if start, n, ok := matchIgnoringSpace(fileLines, oldLines); ok {
		fmt.Fprintf(&msg, " The text is at %s, but its whitespace or indentation differs%s. "+
			"Copy old_string from these lines exactly (without the line numbers):\n", span(start, n), indentNote(fileLines[start:start+n], oldLines))
		showLines(&msg, fileLines, start, n)
		return errdefs.Failed("%s", strings.TrimRight(msg.String(), "\n"))
	}
	start, n, score := closestWindow(fileLines, oldLines)
	if score < minSimilarity {
		msg.WriteString(" No lines of the file are similar to it. Read the file again (read_file): it may have changed since you last saw it.")
		return errdefs.Failed("%s", msg.String())
	}
	fmt.Fprintf(&msg, " The most similar text is at %s (%d%% similar). If that is the place, copy old_string from these lines exactly "+
		"(without the line numbers):\n", span(start, n), int(score*100))
	showLines(&msg, fileLines, start, n)
	return errdefs.Failed("%s", strings.TrimRight(msg.String(), "\n"))
}

// oldStringHint explains a common mistake in old_string, if it shows one.
func oldStringHint(old string, lines []string) string {
	numbered := 0
	for _, l := range lines {
		if lineNumberPrefix.MatchString(l) {
			numbered++
		}
	}
	if numbered > 0 && numbered == len(lines) {
		return "It seems to include the line-number prefixes of read_file's output (number and tab); leave them out."
	}
	if !strings.Contains(old, "\n") && strings.Contains(old, `\n`) {
		return `It contains the two characters \n but no line break; if you meant a line break, put a real newline in the string.`
	}
	return ""
}

// splitLines splits text into lines without their line endings.
func splitLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// span renders a 0-based start and a count as "line 5" or "lines 5-7".
func span(start, n int) string {
	if n <= 1 {
		return fmt.Sprintf("line %d", start+1)
	}
	return fmt.Sprintf("lines %d-%d", start+1, start+n)
}

// showLines writes lines[start:start+n] numbered like read_file, at most
// maxShownMatch of them.
func showLines(b *strings.Builder, lines []string, start, n int) {
	end := min(start+n, len(lines), start+maxShownMatch)
	for i := start; i < end; i++ {
		text, _, _ := scan.CutLine([]byte(lines[i]), len(lines[i]), shownLineChars)
		fmt.Fprintf(b, "%6d\t%s\n", i+1, text)
	}
	if start+n > end {
		fmt.Fprintf(b, "... (%d more lines)\n", start+n-end)
	}
}

// collapse returns s with runs of whitespace made one space, trimmed.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// matchIgnoringSpace finds old's lines in the file when whitespace is
// ignored: the first and last lines of old may be parts of lines (old_string
// can start and end mid-line), the others whole lines.
func matchIgnoringSpace(file, old []string) (start, n int, ok bool) {
	c := make([]string, len(old))
	for i, l := range old {
		c[i] = collapse(l)
	}
	n = len(old)
	for s := 0; s+n <= len(file); s++ {
		if matchAt(file, c, s) {
			return s, n, true
		}
	}
	return 0, 0, false
}

func matchAt(file, old []string, s int) bool {
	n := len(old)
	for i := range n {
		f := collapse(file[s+i])
		switch {
		case n == 1:
			if old[0] == "" || !strings.Contains(f, old[0]) {
				return false
			}
		case i == 0:
			if !strings.HasSuffix(f, old[0]) {
				return false
			}
		case i == n-1:
			if !strings.HasPrefix(f, old[i]) {
				return false
			}
		default:
			if f != old[i] {
				return false
			}
		}
	}
	return true
}

// indentNote says how the indentation of the file's lines differs from
// old's, when it is tabs against spaces.
func indentNote(file, old []string) string {
	tabsF, tabsO, spacesF, spacesO := false, false, false, false
	for i := range min(len(file), len(old)) {
		f := file[i][:len(file[i])-len(strings.TrimLeft(file[i], " \t"))]
		o := old[i][:len(old[i])-len(strings.TrimLeft(old[i], " \t"))]
		tabsF = tabsF || strings.Contains(f, "\t")
		spacesF = spacesF || strings.Contains(f, " ")
		tabsO = tabsO || strings.Contains(o, "\t")
		spacesO = spacesO || strings.Contains(o, " ")
	}
	switch {
	case tabsF && !tabsO && spacesO:
		return " (the file indents with tabs, old_string with spaces)"
	case spacesF && !spacesO && tabsO:
		return " (the file indents with spaces, old_string with tabs)"
	}
	return ""
}

// closestWindow finds the run of len(old) file lines most similar to old:
// the windows aligned on the file lines most like a few anchor lines of old
// (its first, last and longest), scored by the mean similarity of their
// lines. It costs about one pass over the file per anchor.
func closestWindow(file, old []string) (start, n int, score float64) {
	n = len(old)
	grams := make([][]uint16, n)
	for i, l := range old {
		grams[i] = bigrams(l)
	}
	anchors := []int{0, n - 1}
	longest := 0
	for i, l := range old {
		if len(strings.TrimSpace(l)) > len(strings.TrimSpace(old[longest])) {
			longest = i
		}
	}
	anchors = append(anchors, longest)
	slices.Sort(anchors)
	anchors = slices.Compact(anchors)

	fileGrams := make([][]uint16, len(file)) // computed on demand
	gramsOf := func(i int) []uint16 {
		if fileGrams[i] == nil {
			fileGrams[i] = bigrams(file[i])
			if fileGrams[i] == nil {
				fileGrams[i] = []uint16{}
			}
		}
		return fileGrams[i]
	}
	lineSim := func(o, f int) float64 {
		if f < 0 || f >= len(file) {
			return 0
		}
		a, b := grams[o], gramsOf(f)
		if len(a) == 0 || len(b) == 0 {
			if strings.TrimSpace(old[o]) == strings.TrimSpace(file[f]) {
				return 1
			}
			return 0
		}
		return dice(a, b)
	}
	type cand struct {
		line int
		sim  float64
	}
	starts := map[int]bool{}
	for _, a := range anchors {
		if len(grams[a]) == 0 {
			continue
		}
		var best []cand
		la := len(grams[a])
		for f := range file {
			// Dice similarity of at least minSimilarity needs sizes within
			// a factor of three: skip the rest without computing it.
			lf := len(strings.TrimSpace(file[f]))
			if lf == 0 || lf > 3*(la+1) || la > 3*(lf+1) {
				continue
			}
			s := lineSim(a, f)
			if s < minSimilarity/2 {
				continue
			}
			best = append(best, cand{f, s})
			if len(best) > 4*anchorCandidate {
				slices.SortStableFunc(best, func(x, y cand) int { return cmpFloat(y.sim, x.sim) })
				best = best[:anchorCandidate]
			}
		}
		slices.SortStableFunc(best, func(x, y cand) int { return cmpFloat(y.sim, x.sim) })
		for _, c := range best[:min(len(best), anchorCandidate)] {
			starts[c.line-a] = true
		}
	}
	start, score = 0, -1
	for s := range starts {
		if s < 0 || s >= len(file) {
			continue
		}
		total := 0.0
		for i := range n {
			total += lineSim(i, s+i)
		}
		if sc := total / float64(n); sc > score || (sc == score && s < start) {
			start, score = s, sc
		}
	}
	return start, min(n, len(file)-start), score
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bigrams returns the sorted byte pairs of s with its whitespace collapsed
// and letters lowered: the unit of the Dice similarity.
func bigrams(s string) []uint16 {
	c := strings.ToLower(collapse(s))
	if len(c) < 2 {
		if c == "" {
			return nil
		}
		return []uint16{uint16(c[0])}
	}
	g := make([]uint16, len(c)-1)
	for i := range g {
		g[i] = uint16(c[i])<<8 | uint16(c[i+1])
	}
	slices.Sort(g)
	return g
}

// dice returns the Dice coefficient of two sorted multisets: twice the size
// of their intersection over the sum of their sizes.
func dice(a, b []uint16) float64 {
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}
