package textcalls

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// parsePyCalls reads Python-style calls: "f(a=1, b='x')", several on their
// own lines or in a list "[f(a=1), g()]", each optionally inside print(...).
// Keyword values are Python literals, converted to JSON. With lenient (seed
// 003's TOOL_CALL lines), a value that is not a literal is taken as a
// string. Positional arguments are an error: there is no name to give them.
func parsePyCalls(s string, lenient bool) ([]Call, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
		t = strings.TrimSpace(t[1 : len(t)-1])
	}
	var calls []Call
	for t != "" {
		name, args, rest, err := parseOneCall(t, lenient)
		if err != nil {
			return nil, err
		}
		if name == "print" {
			// print(f(a=1)): the call is inside.
			inner, err := parsePyCalls(args, lenient)
			if err != nil {
				return nil, err
			}
			calls = append(calls, inner...)
		} else {
			a, err := keywordArgs(args, lenient)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			name = strings.TrimSuffix(name, ".call") // Llama's builtin brave_search.call(...)
			calls = append(calls, Call{Name: name, Arguments: a})
		}
		t = strings.TrimLeft(rest, " \t\r\n,;")
	}
	if len(calls) == 0 {
		return nil, errors.New("no call")
	}
	return calls, nil
}

// parseOneCall reads "name(args)" at the start of t.
func parseOneCall(t string, lenient bool) (name, args, rest string, err error) {
	i := 0
	for i < len(t) && (isIdent(t[i]) || t[i] == '.') {
		i++
	}
	name = t[:i]
	j := i
	for j < len(t) && (t[j] == ' ' || t[j] == '\t') {
		j++
	}
	if name == "" || j >= len(t) || t[j] != '(' {
		return "", "", "", fmt.Errorf("expected name(...) at %q", clip(t))
	}
	depth := 0
	var quote byte
	for k := j; k < len(t); k++ {
		c := t[k]
		if quote != 0 {
			switch c {
			case '\\':
				k++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return name, t[j+1 : k], t[k+1:], nil
			}
		}
	}
	return "", "", "", fmt.Errorf("unbalanced parentheses in %q", clip(t))
}

// keywordArgs turns "a=1, b='x'" into a JSON object.
func keywordArgs(s string, lenient bool) (string, error) {
	obj := map[string]json.RawMessage{}
	var order []string
	for _, part := range splitTopLevel(s, ',') {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		eq := strings.IndexByte(part, '=')
		if eq <= 0 || !isIdentString(strings.TrimSpace(part[:eq])) {
			return "", fmt.Errorf("positional argument %q: write name=value", clip(part))
		}
		key := strings.TrimSpace(part[:eq])
		val := strings.TrimSpace(part[eq+1:])
		js, ok := pythonLiteral(val)
		if !ok {
			if !lenient {
				return "", fmt.Errorf("the value of %s is not a literal: %s", key, clip(val))
			}
			b, _ := json.Marshal(strings.Trim(val, `"'`))
			js = string(b)
		}
		if _, dup := obj[key]; !dup {
			order = append(order, key)
		}
		obj[key] = json.RawMessage(js)
	}
	// Keep the order written (json.Marshal of a map would sort).
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(obj[k])
	}
	b.WriteByte('}')
	return b.String(), nil
}

// splitTopLevel splits s at sep outside quotes and brackets.
func splitTopLevel(s string, sep byte) []string {
	var parts []string
	depth, last := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case sep:
			if depth == 0 {
				parts = append(parts, s[last:i])
				last = i + 1
			}
		}
	}
	return append(parts, s[last:])
}

func isIdent(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func isIdentString(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdent(s[i]) {
			return false
		}
	}
	return true
}
