package scan

import (
	"math/rand/v2"
	"mime"
	"net/http"
	"testing"
	"unicode/utf8"
)

// mostlyNotTextByRune is mostlyNotText without its eight-byte skip: the
// reference its fast path must agree with.
func mostlyNotTextByRune(b []byte) bool {
	bad := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != '\b' && c != 0x1b {
				bad++
			} else if c == 0x7f {
				bad++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			if len(b)-i < utf8.UTFMax && !utf8.FullRune(b[i:]) {
				break
			}
			bad++
		}
		i += size
	}
	return bad*5 > len(b)
}

// TestBinaryKindFastPaths checks the eight-byte skip of mostlyNotText and
// sniffedType against what they replace, on text, every single byte value
// at every position of a word, and random mixes near the one-fifth line.
func TestBinaryKindFastPaths(t *testing.T) {
	var inputs [][]byte
	text := []byte("line 1: the quick brown fox jumps over the lazy dog\n\tß → ✓ {}~\r\n")
	inputs = append(inputs, text, nil, []byte("%PDF-1.4\n"), []byte("BM text"), []byte("<html><body>x</body></html>"), []byte("\x89PNG\r\n\x1a\n"))
	for c := range 256 {
		for pos := range 9 {
			b := []byte("abcdefghijklmnop")
			b[pos] = byte(c)
			inputs = append(inputs, b)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		b := make([]byte, r.IntN(200))
		for i := range b {
			switch r.IntN(10) {
			case 0:
				b[i] = byte(r.IntN(256))
			case 1:
				b[i] = byte(r.IntN(0x20))
			default:
				b[i] = text[r.IntN(len(text))]
			}
		}
		inputs = append(inputs, b)
	}
	for _, b := range inputs {
		if got, want := mostlyNotText(b), mostlyNotTextByRune(b); got != want {
			t.Fatalf("mostlyNotText(%q) = %v, want %v", b, got, want)
		}
		want, _, _ := mime.ParseMediaType(http.DetectContentType(b))
		if got := sniffedType(b); got != want {
			t.Fatalf("sniffedType(%q) = %q, want %q", b, got, want)
		}
	}
}
