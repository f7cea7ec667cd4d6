package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// unknownField is how yaml's strict decoding (KnownFields) reports a key
// that no field has: "line 3: field approvl_mode not found in type
// config.Config".
var unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)

// explainDecode rewrites the unknown-key errors of yaml's strict decoding
// into messages a person can act on: the key, the section it was in, and
// the known key closest to it ("unknown key approvl_mode (line 3); did you
// mean approval_mode?"). Other errors are returned as they are.
func explainDecode(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	sections := sectionKeys()
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		m := unknownField.FindStringSubmatch(strings.TrimSpace(e))
		if m == nil {
			msgs = append(msgs, e)
			continue
		}
		line, key, typ := m[1], m[2], m[3]
		sec := sections[typ]
		msg := fmt.Sprintf("line %s: unknown key %q", line, key)
		if sec.path != "" {
			msg = fmt.Sprintf("line %s: unknown key %q in %s", line, key, sec.path)
		}
		if s := closestKey(key, sec.keys); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else if len(sec.keys) > 0 {
			msg += "; known keys: " + strings.Join(sec.keys, ", ")
		}
		msgs = append(msgs, msg)
	}
	return errors.New(strings.Join(msgs, "\n  "))
}

// section is one YAML mapping of the configuration: where it is ("" for
// the top level, else "terminal", "memory.embeddings", ...) and its keys.
type section struct {
	path string
	keys []string
}

// sectionKeys maps each struct type of Config (by its name as yaml prints
// it, "config.Config") to its section.
func sectionKeys() map[string]section {
	out := map[string]section{}
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		if _, seen := out[t.String()]; seen {
			return
		}
		sec := section{path: path}
		out[t.String()] = sec // before recursing: a type that contains itself
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			if strings.Contains(opts, "inline") {
				walk(f.Type, path)
				sec.keys = append(sec.keys, out[f.Type.String()].keys...)
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			sec.keys = append(sec.keys, name)
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			walk(f.Type, sub)
		}
		out[t.String()] = sec
	}
	walk(reflect.TypeFor[Config](), "")
	return out
}

// closestKey returns the key of keys closest to key by edit distance, when
// it is close enough to be a misspelling (at most a third of its letters
// differ, and at least one may), or "".
func closestKey(key string, keys []string) string {
	best, bestD := "", max(1, len(key)/3)+1
	for _, k := range keys {
		if d := editDistance(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes; the
// keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
