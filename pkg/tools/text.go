package tools

import (
	"fmt"
	"unicode/utf8"
)

// Clip shortens s to at most n runes for a display line, on one line:
// newlines and tabs become spaces, and a cut string ends in "…". It is the
// one helper for display lines; a tool's Previewer.Preview (a diff of what
// a call would change) is something else.
func Clip(s string, n int) string {
	if clipped(s, n) {
		return s // nothing to change: no copy (think's Display, every call)
	}
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

// HumanSize is the one formatter of byte counts that a model or a person
// sees, in binary units: "532 B", "4 KiB", "1.4 KiB", "95.4 MiB". A count
// that is a whole number of its unit drops the decimal ("4 MiB").
func HumanSize(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; (m >= unit || m <= -unit) && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	if n%div == 0 {
		return fmt.Sprintf("%d %ciB", n/div, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// clipped reports whether Clip(s, n) is s itself: valid UTF-8 of at most n
// runes, none of them a newline, carriage return or tab.
func clipped(s string, n int) bool {
	runes := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\n' || r == '\r' || r == '\t' {
			return false
		}
		runes++
		if runes > n {
			return false
		}
		i += size
	}
	return true
}
