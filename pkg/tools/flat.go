package tools

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeFlat decodes argument text that is a flat JSON object — the shape
// of most calls' arguments: string keys, and values that are strings
// without escapes, numbers, true, false or null — into exactly what the
// general path (decodeJSON, numbers as json.Number) makes of it, in one
// pass over the text and without encoding/json's Decoder. The keys and
// strings are substrings of text. It reports false for anything else (an
// escape, a nested value, invalid or unusual JSON, leading or trailing
// text), and the caller then takes the general path, which decodes, repairs
// or refuses it as before: this path never refuses, so bad input gets the
// same typed error whichever path would have read it. A general JSON
// decoder (a library) would have to be the whole general path to keep its
// errors; this is the one shape worth a path of its own.
func decodeFlat(text string) (map[string]any, bool) {
	i := skipWS(text, 0)
	if i >= len(text) || text[i] != '{' {
		return nil, false
	}
	i = skipWS(text, i+1)
	m := make(map[string]any, 4)
	if i < len(text) && text[i] == '}' {
		return m, skipWS(text, i+1) == len(text)
	}
	for {
		key, j, ok := flatString(text, i)
		if !ok {
			return nil, false
		}
		i = skipWS(text, j)
		if i >= len(text) || text[i] != ':' {
			return nil, false
		}
		i = skipWS(text, i+1)
		if i >= len(text) {
			return nil, false
		}
		var v any
		switch c := text[i]; {
		case c == '"':
			v, j, ok = flatString(text, i)
		case c == '-' || c >= '0' && c <= '9':
			if j, ok = flatNumber(text, i); ok {
				v = json.Number(text[i:j])
			}
		case hasWord(text, i, "true"):
			v, j, ok = true, i+4, true
		case hasWord(text, i, "false"):
			v, j, ok = false, i+5, true
		case hasWord(text, i, "null"):
			v, j, ok = nil, i+4, true
		default:
			ok = false
		}
		if !ok {
			return nil, false
		}
		m[key] = v
		i = skipWS(text, j)
		if i >= len(text) {
			return nil, false
		}
		switch text[i] {
		case ',':
			i = skipWS(text, i+1)
		case '}':
			return m, skipWS(text, i+1) == len(text)
		default:
			return nil, false
		}
	}
}

// skipWS skips JSON's whitespace from i.
func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func hasWord(s string, i int, w string) bool {
	return len(s)-i >= len(w) && s[i:i+len(w)] == w
}

// flatString reads the string at s[i] (a quote) with no escape, no control
// character and valid UTF-8; it returns its content and the index after it.
func flatString(s string, i int) (string, int, bool) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	ascii := true
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			str := s[i+1 : j]
			if !ascii && !utf8.ValidString(str) {
				return "", 0, false
			}
			return str, j + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", 0, false
}

// flatNumber reads the JSON number at s[i] (RFC 8259's grammar) and
// returns the index after it.
func flatNumber(s string, i int) (int, bool) {
	digits := func(j int) int {
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j
	}
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	// What follows must end the value; anything else (a letter, a second
	// sign) is for the general path to judge.
	if i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r', ',', '}':
		default:
			return 0, false
		}
	}
	return i, true
}
