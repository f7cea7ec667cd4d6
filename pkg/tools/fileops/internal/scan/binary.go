package scan

import (
	"bytes"
	"encoding/binary"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// SniffLen is how much of a file's head binary detection looks at.
const SniffLen = 8 << 10

// BinaryKind reports whether head, the first bytes of a file, looks binary,
// and if so its detected media type. A file is binary when its head holds a
// NUL byte, when it starts with the signature of a known binary format
// (images, archives, PDF, fonts, audio, video, WebAssembly), or when more
// than a fifth of its head is neither valid UTF-8 nor ordinary whitespace.
// Text in a legacy encoding (Latin-1 accents here and there) stays text.
func BinaryKind(name string, head []byte) (mimeType string, binary bool) {
	if len(head) > SniffLen {
		head = head[:SniffLen]
	}
	mt := sniffedType(head)
	switch {
	case bytes.IndexByte(head, 0) >= 0, binaryMediaType(mt), mostlyNotText(head):
	default:
		return "", false
	}
	if mt == "" || mt == "application/octet-stream" || strings.HasPrefix(mt, "text/") {
		byExt, _, _ := mime.ParseMediaType(mime.TypeByExtension(path.Ext(name)))
		if byExt != "" && !strings.HasPrefix(byExt, "text/") {
			return byExt, true
		}
		return "application/octet-stream", true
	}
	return mt, true
}

// sniffedType is the media type http.DetectContentType finds in head,
// without parameters: what mime.ParseMediaType makes of it, without its
// parsing (the sniffer answers only its own constants, in lower case, with
// at most "; charset=utf-8" after the type).
func sniffedType(head []byte) string {
	mt := http.DetectContentType(head)
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	return mt
}

// binaryMediaType reports whether a sniffed media type is a binary format.
func binaryMediaType(mt string) bool {
	for _, p := range []string{"image/", "audio/", "video/", "font/"} {
		if strings.HasPrefix(mt, p) {
			return true
		}
	}
	switch mt {
	case "application/pdf", "application/zip", "application/x-gzip", "application/wasm",
		"application/x-rar-compressed", "application/ogg", "application/vnd.ms-fontobject":
		return true
	}
	return false
}

// mostlyNotText reports whether more than a fifth of b is invalid UTF-8 or
// control characters other than whitespace, backspace and escape. A rune cut
// at the end of b does not count.
func mostlyNotText(b []byte) bool {
	bad := 0
	for i := 0; i < len(b); {
		if i+8 <= len(b) && printableASCII(binary.LittleEndian.Uint64(b[i:])) {
			i += 8 // eight characters of ordinary text at once
			continue
		}
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
				break // cut at the end of the sample
			}
			bad++
		}
		i += size
	}
	return bad*5 > len(b)
}

// printableASCII reports whether the eight bytes of w are all printable
// ASCII (0x20 to 0x7e), which mostlyNotText counts as text.
func printableASCII(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	if w&highs != 0 {
		return false // a byte of 0x80 or more
	}
	less := (w - ones*0x20) & ^w & highs // a byte below 0x20
	del := w ^ (ones * 0x7f)             // a zero byte where w had 0x7f
	return less == 0 && (del-ones)&^del&highs == 0
}
