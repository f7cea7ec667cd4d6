package scan

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CutLine returns line as valid UTF-8 text of at most maxChars characters
// and how many of its bytes that shows. When it cuts, it appends a marker
// saying how many bytes were left out and reports cut. total is the line's
// full length in bytes, which exceeds len(line) when the caller kept only the
// head of a very long line.
func CutLine(line []byte, total, maxChars int) (text string, shown int, cut bool) {
	if len(line) <= maxChars && total == len(line) { // fewer bytes than characters allowed
		return ValidText(line), len(line), false
	}
	i, chars := 0, 0
	for i < len(line) && chars < maxChars {
		_, size := utf8.DecodeRune(line[i:])
		i += size
		chars++
	}
	if i == len(line) && total == len(line) {
		return ValidText(line), len(line), false
	}
	return fmt.Sprintf("%s … [line cut: %d more bytes]", ValidText(line[:i]), total-i), i, true
}

// ValidText returns b as a string, invalid UTF-8 replaced by U+FFFD (results
// travel in protobuf strings, which must be valid UTF-8).
func ValidText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// MaxHeadBytes is how many bytes of a line are enough to show maxChars
// characters of it.
func MaxHeadBytes(maxChars int) int { return maxChars * utf8.UTFMax }
