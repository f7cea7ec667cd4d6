package fileops

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// plural returns "1 line" or "2 lines".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// cutLine returns line as valid UTF-8 text of at most maxChars characters
// and how many of its bytes that shows. When it cuts, it appends a marker
// saying how many bytes were left out and reports cut. total is the line's
// full length in bytes, which exceeds len(line) when the caller kept only the
// head of a very long line.
func cutLine(line []byte, total, maxChars int) (text string, shown int, cut bool) {
	if len(line) <= maxChars && total == len(line) { // fewer bytes than characters allowed
		return validText(line), len(line), false
	}
	i, chars := 0, 0
	for i < len(line) && chars < maxChars {
		_, size := utf8.DecodeRune(line[i:])
		i += size
		chars++
	}
	if i == len(line) && total == len(line) {
		return validText(line), len(line), false
	}
	return fmt.Sprintf("%s … [line cut: %d more bytes]", validText(line[:i]), total-i), i, true
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

// appendCutLine is cutLine appending to b: the line's text (at most
// maxChars characters, invalid UTF-8 replaced) and the cut note.
func appendCutLine(b, line []byte, total, maxChars int) (out []byte, shown int, cut bool) {
	if len(line) <= maxChars && total == len(line) && utf8.Valid(line) {
		return append(b, line...), len(line), false
	}
	text, shown, cut := cutLine(line, total, maxChars)
	return append(b, text...), shown, cut
}

// validText returns b as a string, invalid UTF-8 replaced by U+FFFD (results
// travel in protobuf strings, which must be valid UTF-8).
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// maxHeadBytes is how many bytes of a line are enough to show maxChars
// characters of it.
func maxHeadBytes(maxChars int) int { return maxChars * utf8.UTFMax }
