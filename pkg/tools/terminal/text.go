package terminal

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// cleanText turns terminal output into text for a model: what a terminal
// would show, as plain lines. It removes ANSI escape sequences (colors,
// cursor movement, titles), drops what a carriage return overwrites
// ("50%\r60%" shows "60%"), applies backspaces, turns "\r\n" into "\n",
// drops other control characters but tab and newline, and replaces invalid
// UTF-8 with U+FFFD. The raw bytes stay available to clients (output chunks,
// raw reads).
func cleanText(b []byte) string {
	var out strings.Builder
	out.Grow(len(b))
	line := make([]byte, 0, 256)
	const (
		normal = iota
		esc
		csi
		str    // OSC, DCS, SOS, PM, APC: until BEL or ESC \
		strEsc // ESC seen inside a string
		escInt // ESC followed by intermediate bytes ("ESC ( B")
	)
	state, cr := normal, false
	flush := func() {
		out.Write(line)
		out.WriteByte('\n')
		line = line[:0]
		cr = false
	}
	for _, c := range b {
		switch state {
		case esc:
			switch {
			case c == '[':
				state = csi
			case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
				state = str
			case c >= 0x20 && c <= 0x2f:
				state = escInt
			default:
				state = normal
			}
			continue
		case csi:
			switch {
			case c >= 0x40 && c <= 0x7e:
				state = normal
			case c < 0x20 || c > 0x7e:
				state = normal // malformed; resync
			}
			continue
		case str:
			switch c {
			case 0x07:
				state = normal
			case 0x1b:
				state = strEsc
			}
			continue
		case strEsc:
			state = normal
			continue
		case escInt:
			if c < 0x20 || c > 0x2f {
				state = normal
			}
			continue
		}
		switch {
		case c == 0x1b:
			state = esc
		case c == '\n':
			flush()
		case c == '\r':
			cr = true
		case c == '\b':
			if len(line) > 0 {
				_, size := utf8.DecodeLastRune(line)
				line = line[:len(line)-size]
			}
		case c == '\t' || c >= 0x20 && c != 0x7f:
			if cr {
				line, cr = line[:0], false
			}
			line = append(line, c)
		}
	}
	out.Write(line)
	s := out.String()
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// rawText returns b as a valid UTF-8 string, escape sequences kept.
func rawText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// trimPartialRune returns how many bytes at the end of b form an incomplete
// UTF-8 sequence (0 to 3), so that a reader can stop before them and get
// the whole character next time.
func trimPartialRune(b []byte) int {
	for i := 1; i <= min(3, len(b)); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return 0 // ASCII: complete
		}
		if c >= 0xc0 { // a leading byte: is its sequence complete?
			need := 2
			switch {
			case c >= 0xf0:
				need = 4
			case c >= 0xe0:
				need = 3
			}
			if i < need {
				return i
			}
			return 0
		}
	}
	return 0
}

// cutView picks what a model sees of a stream too long to show whole: up
// to limit bytes from its head and its tail. head holds the stream's first
// bytes, tail its last, total is its length. It returns the head and tail
// parts to show and the range of bytes left out, [cutFrom, cutTo); nothing
// was cut when cutFrom == cutTo (then h is the whole stream). Cuts move to a
// line boundary when one is near, and never split a UTF-8 character.
func cutView(head, tail []byte, total int64, limit int) (h, t []byte, cutFrom, cutTo int64) {
	if total <= int64(limit) && int64(len(head)) >= total {
		return head[:total], nil, total, total
	}
	hn := min(len(head), limit/2)
	tn := min(len(tail), limit-hn)
	h = head[:hn]
	if i := bytes.LastIndexByte(h, '\n'); i >= 0 && i >= len(h)*3/4 {
		h = h[:i+1]
	}
	h = h[:len(h)-trimPartialRune(h)]
	t = tail[len(tail)-tn:]
	if i := bytes.IndexByte(t, '\n'); i >= 0 && i < len(t)/4 {
		t = t[i+1:]
	}
	for len(t) > 0 && t[0]&0xc0 == 0x80 { // continuation bytes of a cut character
		t = t[1:]
	}
	return h, t, int64(len(h)), total - int64(len(t))
}
