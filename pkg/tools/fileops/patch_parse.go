package fileops

import (
	"fmt"
	"slices"
	"strings"
)

// The patch language of codex's apply_patch (openai/codex,
// codex-rs/apply-patch), the edit format OpenAI's models are trained on:
//
//	start: begin_patch hunk+ end_patch
//	begin_patch: "*** Begin Patch" LF
//	end_patch: "*** End Patch" LF?
//	hunk: add_hunk | delete_hunk | update_hunk
//	add_hunk: "*** Add File: " filename LF add_line+
//	delete_hunk: "*** Delete File: " filename LF
//	update_hunk: "*** Update File: " filename LF change_move? change?
//	change_move: "*** Move to: " filename LF
//	change: (change_context | change_line)+ eof_line?
//	change_context: ("@@" | "@@ " /(.+)/) LF
//	change_line: ("+" | "-" | " ") /(.+)/ LF
//	eof_line: "*** End of File" LF
//
// Parsed as codex parses it, leniencies included: the text is trimmed;
// the markers may be padded with whitespace; a patch wrapped in a heredoc
// (<<EOF, <<'EOF' or <<"EOF" on the first line, a last line ending in EOF)
// is unwrapped (and, beyond codex, a patch in a Markdown code fence); the
// first chunk of an update may omit its @@ line; blank
// lines between chunks are skipped and an empty line inside a chunk is an
// empty context line; several @@ lines in a row narrow the position step
// by step. Error messages are codex's, word for word, so that a model
// trained on them knows what to fix.

// Markers of the patch language.
const (
	beginPatchMarker   = "*** Begin Patch"
	endPatchMarker     = "*** End Patch"
	addFileMarker      = "*** Add File: "
	deleteFileMarker   = "*** Delete File: "
	updateFileMarker   = "*** Update File: "
	moveToMarker       = "*** Move to: "
	eofMarker          = "*** End of File"
	contextMarker      = "@@ "
	emptyContextMarker = "@@"
)

// patchOp is the kind of a file section of a patch.
type patchOp int

const (
	patchAdd patchOp = iota
	patchDelete
	patchUpdate
)

// patchHunk is one file section of a patch.
type patchHunk struct {
	op   patchOp
	path string
	// contents is the new file of an Add.
	contents string
	// moveTo is the new path of an Update that renames, or "".
	moveTo string
	chunks []patchChunk
}

// patchChunk is one change of an Update: old lines replaced by new ones.
type patchChunk struct {
	// context are the @@ lines that narrow where the change is, in order
	// (a class, then a method).
	context  []string
	old, new []string
	// kept[i] is the index in old of new[i] when it is a context line
	// (one the change keeps), -1 for an added line: a kept line keeps the
	// file's text, which may differ from the patch's in whitespace or
	// punctuation.
	kept []int
	// eof says old must be at the end of the file.
	eof bool
}

// patchError is an error in the text of a patch, worded as codex words it.
type patchError struct {
	msg  string
	line int // 1-based line of the patch; 0 for the patch as a whole
}

func (e *patchError) Error() string {
	if e.line == 0 {
		return "invalid patch: " + e.msg
	}
	return fmt.Sprintf("invalid hunk at line %d, %s", e.line, e.msg)
}

// parsePatch parses the text of an apply_patch call.
func parsePatch(text string) ([]patchHunk, error) {
	lines := splitPatchLines(strings.TrimSpace(text))
	body, err := patchBoundaries(lines)
	if err != nil {
		// Lenient: a patch inside a heredoc, as models write it for a
		// shell (codex), or inside a Markdown code fence (toold).
		n := len(lines)
		if n >= 4 && (isHeredocStart(lines[0]) && strings.HasSuffix(lines[n-1], "EOF") ||
			strings.HasPrefix(lines[0], "```") && strings.TrimSpace(lines[n-1]) == "```") {
			if inner, ierr := patchBoundaries(lines[1 : n-1]); ierr == nil {
				body, err = inner, nil
			} else if isHeredocStart(lines[0]) {
				err = ierr
			}
		}
		if err != nil {
			return nil, err
		}
	}
	var hunks []patchHunk
	line := 2
	for len(body) > 0 {
		h, n, err := parseHunk(body, line)
		if err != nil {
			return nil, err
		}
		hunks = append(hunks, h)
		line += n
		body = body[n:]
	}
	return hunks, nil
}

// splitPatchLines splits text into lines as Rust's str::lines does: at
// "\n", a "\r" before it dropped, no empty last line for a final newline.
func splitPatchLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// isHeredocStart reports whether l opens a heredoc as codex accepts it; a
// leading "apply_patch " (the shell command the heredoc was written for)
// is accepted too.
func isHeredocStart(l string) bool {
	l = strings.TrimSpace(l)
	for _, cmd := range []string{"apply_patch ", "applypatch "} {
		if rest, ok := strings.CutPrefix(l, cmd); ok {
			l = strings.TrimSpace(rest)
			break
		}
	}
	return l == "<<EOF" || l == "<<'EOF'" || l == `<<"EOF"`
}

// patchBoundaries checks the first and last lines and returns those in
// between.
func patchBoundaries(lines []string) ([]string, error) {
	var first, last string
	if len(lines) > 0 {
		first, last = strings.TrimSpace(lines[0]), strings.TrimSpace(lines[len(lines)-1])
	}
	switch {
	case len(lines) == 0 || first != beginPatchMarker:
		return nil, &patchError{msg: "The first line of the patch must be '*** Begin Patch'"}
	case len(lines) < 2 || last != endPatchMarker:
		return nil, &patchError{msg: "The last line of the patch must be '*** End Patch'"}
	}
	return lines[1 : len(lines)-1], nil
}

// parseHunk parses the file section at the start of lines, which is line
// number of the patch, and returns it and how many lines it took.
func parseHunk(lines []string, number int) (patchHunk, int, error) {
	first := strings.TrimSpace(lines[0])
	if path, ok := strings.CutPrefix(first, addFileMarker); ok {
		var b strings.Builder
		n := 1
		for _, l := range lines[1:] {
			text, ok := strings.CutPrefix(l, "+")
			if !ok {
				break
			}
			b.WriteString(text)
			b.WriteByte('\n')
			n++
		}
		return patchHunk{op: patchAdd, path: path, contents: b.String()}, n, nil
	}
	if path, ok := strings.CutPrefix(first, deleteFileMarker); ok {
		return patchHunk{op: patchDelete, path: path}, 1, nil
	}
	if path, ok := strings.CutPrefix(first, updateFileMarker); ok {
		h := patchHunk{op: patchUpdate, path: path}
		rest, n := lines[1:], 1
		if len(rest) > 0 {
			if to, ok := strings.CutPrefix(rest[0], moveToMarker); ok {
				h.moveTo = strings.TrimSpace(to)
				rest, n = rest[1:], n+1
			}
		}
		for len(rest) > 0 {
			if strings.TrimSpace(rest[0]) == "" {
				rest, n = rest[1:], n+1
				continue
			}
			if strings.HasPrefix(rest[0], "***") {
				break
			}
			c, m, err := parseChunk(rest, number+n, len(h.chunks) == 0)
			if err != nil {
				return h, 0, err
			}
			h.chunks = append(h.chunks, c)
			rest, n = rest[m:], n+m
		}
		if len(h.chunks) == 0 {
			return h, 0, &patchError{msg: fmt.Sprintf("Update file hunk for path '%s' is empty", path), line: number}
		}
		return h, n, nil
	}
	return patchHunk{}, 0, &patchError{
		msg: fmt.Sprintf("'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', "+
			"'*** Delete File: {path}', '*** Update File: {path}'", first),
		line: number,
	}
}

// parseChunk parses the change at the start of lines, which is line number
// of the patch. The first change of an update may omit its @@ line.
func parseChunk(lines []string, number int, allowNoContext bool) (patchChunk, int, error) {
	var c patchChunk
	start, marked := 0, false
	for start < len(lines) {
		if lines[start] == emptyContextMarker {
			marked = true
		} else if ctx, ok := strings.CutPrefix(lines[start], contextMarker); ok {
			marked = true
			c.context = append(c.context, ctx)
		} else {
			break
		}
		start++
	}
	if !marked && !allowNoContext {
		return c, 0, &patchError{msg: fmt.Sprintf("Expected update hunk to start with a @@ context marker, got: '%s'", lines[0]), line: number}
	}
	if start >= len(lines) {
		return c, 0, &patchError{msg: "Update hunk does not contain any lines", line: number + start}
	}
	n := 0
	for _, l := range lines[start:] {
		if l == eofMarker {
			if n == 0 {
				return c, 0, &patchError{msg: "Update hunk does not contain any lines", line: number + start}
			}
			c.eof = true
			n++
			break
		}
		if l == "" {
			c.kept = append(c.kept, len(c.old))
			c.old = append(c.old, "")
			c.new = append(c.new, "")
			n++
			continue
		}
		switch l[0] {
		case ' ':
			c.kept = append(c.kept, len(c.old))
			c.old = append(c.old, l[1:])
			c.new = append(c.new, l[1:])
		case '+':
			c.kept = append(c.kept, -1)
			c.new = append(c.new, l[1:])
		case '-':
			c.old = append(c.old, l[1:])
		default:
			if n == 0 {
				return c, 0, &patchError{
					msg: fmt.Sprintf("Unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), "+
						"'+' (added line), or '-' (removed line)", l),
					line: number + start,
				}
			}
			// The start of the next chunk or section.
			return c, n + start, nil
		}
		n++
	}
	return c, n + start, nil
}

// seekSequence finds pattern in lines at or after start, as codex does:
// exactly, then ignoring trailing whitespace, then ignoring surrounding
// whitespace, then with typographic punctuation (dashes, quotes, odd
// spaces) read as ASCII. With eof it tries the end of the file first. It
// returns -1 when the pattern is not there.
func seekSequence(lines, pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return start
	}
	if len(pattern) > len(lines) {
		return -1
	}
	from := start
	if eof {
		from = len(lines) - len(pattern)
	}
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t\r\n\v\f") },
		strings.TrimSpace,
		normalisePunctuation,
	} {
		if i := seekWith(lines, pattern, from, norm); i >= 0 {
			return i
		}
	}
	if eof && from > start {
		// Not at the end after all: search from start.
		return seekSequence(lines, pattern, start, false)
	}
	return -1
}

func seekWith(lines, pattern []string, from int, norm func(string) string) int {
	for i := max(from, 0); i+len(pattern) <= len(lines); i++ {
		ok := true
		for j, p := range pattern {
			if norm(lines[i+j]) != norm(p) {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// punctuation maps typographic characters to the ASCII ones a patch
// written by a model has instead: the table of codex's seek_sequence.
var punctuation = strings.NewReplacer(
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'",
	"\u201C", `"`, "\u201D", `"`, "\u201E", `"`, "\u201F", `"`,
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ",
	"\u2007", " ", "\u2008", " ", "\u2009", " ", "\u200A", " ", "\u202F", " ", "\u205F", " ", "\u3000", " ",
)

func normalisePunctuation(s string) string { return punctuation.Replace(strings.TrimSpace(s)) }

// applyChunks applies the changes of an update to the lines of a file (its
// line breaks removed; a final newline leaves no empty last line) and
// returns the new lines. name is for messages.
func applyChunks(lines []string, name string, chunks []patchChunk) ([]string, error) {
	type replacement struct {
		start, n int
		new      []string
	}
	var reps []replacement
	at := 0
	for _, c := range chunks {
		for _, ctx := range c.context {
			i := seekSequence(lines, []string{ctx}, at, false)
			if i < 0 {
				return nil, &hunkError{msg: fmt.Sprintf("Failed to find context '%s' in %s", ctx, name), want: []string{ctx}}
			}
			at = i + 1
		}
		if len(c.old) == 0 {
			// A pure addition goes at the end of the file, as in codex.
			end := len(lines)
			if end > 0 && lines[end-1] == "" {
				end--
			}
			reps = append(reps, replacement{end, 0, c.new})
			continue
		}
		old, repl, kept := c.old, c.new, c.kept
		i := seekSequence(lines, old, at, c.eof)
		if i < 0 && old[len(old)-1] == "" {
			// The last old line may stand for the file's final newline.
			old = old[:len(old)-1]
			if len(repl) > 0 && repl[len(repl)-1] == "" {
				repl, kept = repl[:len(repl)-1], kept[:len(kept)-1]
			}
			i = seekSequence(lines, old, at, c.eof)
		}
		if i < 0 {
			return nil, &hunkError{
				msg:  fmt.Sprintf("Failed to find expected lines in %s:\n%s", name, strings.Join(c.old, "\n")),
				want: c.old,
			}
		}
		// Context lines keep the file's text (codex writes the patch's).
		out := make([]string, len(repl))
		for k, l := range repl {
			if j := kept[k]; j >= 0 && j < len(old) {
				l = lines[i+j]
			}
			out[k] = l
		}
		reps = append(reps, replacement{i, len(old), out})
		at = i + len(old)
	}
	// Sorted by line, stably (codex sorts the same way), then applied
	// from the last to the first so that offsets stay valid.
	slices.SortStableFunc(reps, func(a, b replacement) int { return a.start - b.start })
	out := append([]string(nil), lines...)
	for k := len(reps) - 1; k >= 0; k-- {
		r := reps[k]
		end := min(r.start+r.n, len(out))
		tail := append([]string(nil), out[end:]...)
		out = append(append(out[:r.start], r.new...), tail...)
	}
	return out, nil
}

// hunkError is a change of an update that does not fit the file: its
// context or its old lines are not there.
type hunkError struct {
	msg  string
	want []string // the lines looked for
}

func (e *hunkError) Error() string { return e.msg }
