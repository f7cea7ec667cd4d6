package tools

import (
	"encoding/json"
	"slices"
)

// flatSchema is an operation's schema when it is flat — an object of
// properties that are strings, booleans, numbers or string enums, with
// required properties and additionalProperties true or false, nothing
// else — the shape of most tools' schemas (think's, read_file's). accepts
// says that arguments certainly satisfy it, in one look at each argument,
// where the compiled schema's validator walks, allocates and keeps
// evaluation state (a fifth of the executor's CPU on a no-op call). It
// only ever accepts: anything it does not know for certain (a number that
// is not plainly an integer, a property with a keyword it does not read, a
// value of another type, a missing or unknown argument) goes to the
// compiled schema, which accepts or reports it as before, so errors and
// every rule are the library's. That is why it is written here rather than
// taken from a library: a second validator would be a second opinion,
// this is only a shortcut for the yes it would give.
type flatSchema struct {
	props      map[string]flatProp
	required   []string
	additional bool // additionalProperties is not false
}

// flatProp is what a flat schema says of one property; unsure marks one
// with a keyword accepts does not read (the compiled schema then decides
// any call that has it).
type flatProp struct {
	typ    string   // "string", "boolean", "number" or "integer"
	enum   []string // string values allowed, when not nil
	unsure bool
}

// annotation keywords: they say nothing about validity.
var flatAnnotations = map[string]bool{"description": true, "title": true, "default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true}

// parseFlatSchema returns the flat form of a parsed schema, or nil when it
// is not flat (then the compiled schema validates every call).
func parseFlatSchema(raw map[string]any) *flatSchema {
	if raw["type"] != "object" {
		return nil
	}
	f := &flatSchema{props: map[string]flatProp{}, additional: true}
	for k, v := range raw {
		switch k {
		case "type":
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, ps := range props {
				p, ok := ps.(map[string]any)
				if !ok {
					return nil // a boolean schema: rare, left to the library
				}
				f.props[name] = parseFlatProp(p)
			}
		case "required":
			req, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range req {
				s, ok := r.(string)
				if !ok {
					return nil
				}
				f.required = append(f.required, s)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			f.additional = b
		default:
			if !flatAnnotations[k] {
				return nil
			}
		}
	}
	return f
}

func parseFlatProp(p map[string]any) flatProp {
	var fp flatProp
	for k, v := range p {
		switch k {
		case "type":
			t, _ := v.(string)
			switch t {
			case "string", "boolean", "number", "integer":
				fp.typ = t
			default:
				fp.unsure = true
			}
		case "enum":
			vals, ok := v.([]any)
			if !ok {
				fp.unsure = true
				continue
			}
			fp.enum = []string{}
			for _, e := range vals {
				if s, ok := e.(string); ok {
					fp.enum = append(fp.enum, s)
				}
				// Other members cannot equal a string; a string
				// value is judged by the string members alone, and a
				// value of another type goes to the library.
			}
		default:
			if !flatAnnotations[k] {
				fp.unsure = true
			}
		}
	}
	if fp.typ == "" {
		fp.unsure = true // no type: any value, but rare; the library's
	}
	return fp
}

// accepts reports whether args certainly satisfy the schema; false means
// "ask the compiled schema", not "invalid".
func (f *flatSchema) accepts(args map[string]any) bool {
	for _, r := range f.required {
		if _, ok := args[r]; !ok {
			return false
		}
	}
	for k, v := range args {
		p, ok := f.props[k]
		if !ok {
			if !f.additional {
				return false
			}
			continue
		}
		if p.unsure || !p.fits(v) {
			return false
		}
	}
	return true
}

func (p flatProp) fits(v any) bool {
	switch p.typ {
	case "string":
		s, ok := v.(string)
		return ok && (p.enum == nil || slices.Contains(p.enum, s))
	case "boolean":
		_, ok := v.(bool)
		return ok && p.enum == nil
	case "number":
		n, ok := v.(json.Number)
		return ok && p.enum == nil && plainNumber(string(n), true)
	case "integer":
		n, ok := v.(json.Number)
		return ok && p.enum == nil && plainNumber(string(n), false)
	}
	return false
}

// plainNumber reports whether s is a JSON number with no exponent, and no
// fraction unless fraction: -?digits(.digits)?. Anything else (an
// exponent, a fraction where an integer is wanted) is left to the library.
func plainNumber(s string, fraction bool) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if digits == 0 || (digits > 1 && s[i-digits] == '0') {
		return false
	}
	if i < len(s) && s[i] == '.' && fraction {
		i++
		frac := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			frac++
		}
		if frac == 0 {
			return false
		}
	}
	return i == len(s)
}
