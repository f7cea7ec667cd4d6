package fileops

import (
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"strconv"
	"unicode/utf8"
)

// plural returns "1 line" or "2 lines".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// appendLineNumber appends n right-aligned in six columns and a tab, as
// cat -n does ("     1\t").
func appendLineNumber(b []byte, n int) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(n), 10)
	for i := len(d); i < 6; i++ {
		b = append(b, ' ')
	}
	b = append(append(b, d...), '\t')
	return b
}

// appendCutLine is CutLine appending to b: the line's text (at most
// maxChars characters, invalid UTF-8 replaced) and the cut note.
func appendCutLine(b, line []byte, total, maxChars int) (out []byte, shown int, cut bool) {
	if len(line) <= maxChars && total == len(line) && utf8.Valid(line) {
		return append(b, line...), len(line), false
	}
	text, shown, cut := scan.CutLine(line, total, maxChars)
	return append(b, text...), shown, cut
}
