package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toold/toold/pkg/errdefs"
)

// repairsKey carries the repairs DecodeArguments made to the argument text
// inside the decoded map, to Resolve, which removes it and reports them. It
// is not valid UTF-8, so no argument decoded from JSON or a protobuf Struct
// can have it (both replace or reject invalid UTF-8).
const repairsKey = "\xfftoold:repairs"

// takeRepairs removes and returns the repairs DecodeArguments recorded in
// args.
func takeRepairs(args map[string]any) []Coercion {
	v, ok := args[repairsKey]
	if !ok {
		return nil
	}
	delete(args, repairsKey)
	cs, _ := v.([]Coercion)
	return cs
}

// envelopeKeys are the keys models wrap a call's arguments in.
var envelopeKeys = []string{"arguments", "args", "input", "parameters", "params", "kwargs", "tool_input", "function_arguments"}

// envelope reports whether args is one envelope around the real
// arguments: a single key of envelopeKeys (optionally beside "name",
// "tool", "type" or "function" strings naming the call, as when a whole
// call object was sent as its arguments) holding an object or a JSON text
// of one. It returns the envelope's keys, which the tool must not take for
// the unwrapping to be unambiguous.
func envelope(args map[string]any) (keys []string, inner map[string]any, ok bool) {
	var key string
	for k := range args {
		switch {
		case containsString(envelopeKeys, k):
			if key != "" {
				return nil, nil, false
			}
			key = k
		case k == "name" || k == "tool" || k == "type" || k == "function":
			if _, ok := args[k].(string); !ok {
				return nil, nil, false
			}
		default:
			return nil, nil, false
		}
	}
	if key == "" {
		return nil, nil, false
	}
	for k := range args {
		if k != key {
			keys = append(keys, k)
		}
	}
	keys = append([]string{key}, keys...)
	switch v := args[key].(type) {
	case map[string]any:
		return keys, v, true
	case string:
		if m, _, err := repairText(v); err == nil {
			return keys, m, true
		}
	}
	return nil, nil, false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func cloneArgs(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// truncateText shortens s to at most n bytes (on a rune boundary), marking
// the cut.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d more bytes)", len(s)-cut)
}

// DecodeArgumentsReport is DecodeArguments that also returns the repairs
// made to the text (a Markdown fence, a double-encoded object, a Python
// literal, trailing commas), as Coercions with Field "" (the whole
// arguments). The map it returns carries no record of them.
func DecodeArgumentsReport(text string) (map[string]any, []Coercion, error) {
	m, err := DecodeArguments(text)
	if err != nil {
		return nil, nil, err
	}
	return m, takeRepairs(m), nil
}

// repairText decodes argument text into an object, repairing the forms
// models produce when the result is unambiguous, in this order: a Markdown
// code fence around the JSON; a JSON string holding the object
// (double-encoded); trailing commas; a Python literal (single quotes,
// True/False/None). It returns the rules applied.
func repairText(text string) (map[string]any, []string, error) {
	var rules []string
	t := strings.TrimSpace(text)
	if inner, ok := stripFence(t); ok {
		t = inner
		rules = append(rules, "Markdown code fence removed")
	}
	for range 2 {
		v, err := decodeJSON(t)
		if err != nil {
			if fixed, ok := removeTrailingCommas(t); ok {
				if v2, err2 := decodeJSON(fixed); err2 == nil {
					v, err, t = v2, nil, fixed
					rules = append(rules, "trailing commas removed")
				}
			}
		}
		if err != nil {
			if py, ok := pythonToJSON(t); ok {
				if v2, err2 := decodeJSON(py); err2 == nil {
					v, err, t = v2, nil, py
					rules = append(rules, "Python literal read as JSON")
				}
			}
		}
		if err != nil {
			return nil, rules, err
		}
		switch x := v.(type) {
		case map[string]any:
			return x, rules, nil
		case string:
			inner := strings.TrimSpace(x)
			if s, ok := stripFence(inner); ok {
				inner = s
			}
			if strings.HasPrefix(inner, "{") {
				t = inner
				rules = append(rules, "arguments were a JSON string holding the object (double-encoded); decoded")
				continue
			}
		}
		return nil, rules, errNotObject{v}
	}
	return nil, rules, errNotObject{t}
}

type errNotObject struct{ v any }

func (e errNotObject) Error() string { return "not an object: " + jsonTypeName(e.v) }

// stripFence returns the body of a Markdown code fence (```json ... ```)
// that is the whole text.
func stripFence(t string) (string, bool) {
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return "", false
	}
	body := t[3 : len(t)-3]
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return strings.TrimSpace(body), true
	}
	lang := strings.TrimSpace(body[:nl])
	if lang != "" && strings.ContainsAny(lang, "{[\"") {
		return strings.TrimSpace(body), true
	}
	return strings.TrimSpace(body[nl+1:]), true
}

// removeTrailingCommas drops commas directly before } or ] outside
// strings.
func removeTrailingCommas(t string) (string, bool) {
	var b strings.Builder
	inStr, esc, changed := false, false, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		if inStr {
			b.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
		}
		if c == ',' {
			j := i + 1
			for j < len(t) && strings.IndexByte(" \t\r\n", t[j]) >= 0 {
				j++
			}
			if j < len(t) && (t[j] == '}' || t[j] == ']') {
				changed = true
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String(), changed
}

// pythonToJSON rewrites a Python literal (dict, list, str with single or
// double quotes, True/False/None) as JSON. It fails on anything else
// (calls, f-strings, triple quotes).
func pythonToJSON(t string) (string, bool) {
	var b strings.Builder
	changed := false
	for i := 0; i < len(t); {
		c := t[i]
		switch {
		case c == '\'' || c == '"':
			if strings.HasPrefix(t[i:], `"""`) || strings.HasPrefix(t[i:], `'''`) {
				return "", false
			}
			j := i + 1
			var s strings.Builder
			for ; j < len(t) && t[j] != c; j++ {
				if t[j] == '\\' && j+1 < len(t) {
					j++
					switch t[j] {
					case 'n':
						s.WriteByte('\n')
					case 't':
						s.WriteByte('\t')
					case 'r':
						s.WriteByte('\r')
					case '\\', '\'', '"':
						s.WriteByte(t[j])
					default:
						s.WriteByte('\\')
						s.WriteByte(t[j])
					}
					continue
				}
				s.WriteByte(t[j])
			}
			if j >= len(t) {
				return "", false
			}
			if c == '\'' {
				changed = true
			}
			q, _ := json.Marshal(s.String())
			b.Write(q)
			i = j + 1
		case isIdentStart(c):
			j := i
			for j < len(t) && (isIdentStart(t[j]) || (t[j] >= '0' && t[j] <= '9')) {
				j++
			}
			switch t[i:j] {
			case "True":
				b.WriteString("true")
			case "False":
				b.WriteString("false")
			case "None":
				b.WriteString("null")
			case "true", "false", "null":
				b.WriteString(t[i:j])
				i = j
				continue
			default:
				return "", false
			}
			changed = true
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), changed
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// argumentsError is the error for argument text that cannot be repaired:
// what went wrong, what was received, and the form to send.
func argumentsError(text string, err error) error {
	got := truncateText(strings.TrimSpace(text), 200)
	if ne, ok := err.(errNotObject); ok {
		return errdefs.New(errdefs.ErrInvalidArgument,
			"arguments must be a JSON object, got %s (received: %s); send one JSON object such as {\"path\": \"main.go\"}", jsonTypeName(ne.v), got)
	}
	return errdefs.Wrap(errdefs.ErrInvalidArgument, err,
		"arguments are not valid JSON (%s; received: %s); send one JSON object such as {\"path\": \"main.go\"}", jsonErrorText(err), got)
}

// PythonLiteralJSON rewrites a Python literal (dict, list, str in single or
// double quotes, numbers, True/False/None) as JSON text. It reports false
// for anything else (names, calls, f-strings, triple quotes). Text that is
// already JSON comes back unchanged.
func PythonLiteralJSON(s string) (string, bool) {
	if v, err := decodeJSON(s); err == nil && v != nil || strings.TrimSpace(s) == "null" {
		return strings.TrimSpace(s), true
	}
	out, _ := pythonToJSON(strings.TrimSpace(s))
	if out == "" {
		return "", false
	}
	if _, err := decodeJSON(out); err != nil {
		return "", false
	}
	return out, true
}
