package service

import (
	"bytes"
	"encoding/json"
	"slices"
)

// openAIStrictKeywords are the JSON Schema keywords OpenAI's strict mode
// (function.strict, Structured Outputs) supports.
var openAIStrictKeywords = map[string]bool{
	"type": true, "description": true, "title": true, "enum": true, "const": true,
	"properties": true, "required": true, "additionalProperties": true, "items": true,
	"anyOf": true, "$defs": true, "$ref": true,
	"pattern": true, "format": true,
	"multipleOf": true, "maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true,
	"minItems": true, "maxItems": true,
}

// openAIStrictSchema returns a tool's JSON Schema in the form OpenAI's strict
// mode requires: every object schema has additionalProperties false and
// lists all its properties in required; a property that was optional also
// accepts null (toold removes null optional arguments, and nulls for
// arguments another operation of a consolidated tool takes); keywords strict
// mode does not support are dropped, and so are optional free-form maps
// (objects without properties, such as run_command's env), which strict mode
// cannot express. toold still validates every call against the full schema.
func openAIStrictSchema(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var s any
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return json.Marshal(strictNode(s))
}

func strictNode(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		if !openAIStrictKeywords[k] {
			continue
		}
		switch k {
		case "items":
			out[k] = strictNode(x)
		case "anyOf":
			if list, ok := x.([]any); ok {
				l := make([]any, len(list))
				for i, sub := range list {
					l[i] = strictNode(sub)
				}
				out[k] = l
			}
		case "$defs":
			if defs, ok := x.(map[string]any); ok {
				d := make(map[string]any, len(defs))
				for name, sub := range defs {
					d[name] = strictNode(sub)
				}
				out[k] = d
			}
		case "properties", "required", "additionalProperties":
			// Rebuilt below for object schemas.
		default:
			out[k] = x
		}
	}
	if !isObjectSchema(m) {
		if ap, ok := m["additionalProperties"].(bool); ok {
			out["additionalProperties"] = ap
		}
		return out
	}
	required := map[string]bool{}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	props := map[string]any{}
	names := []string{}
	in, _ := m["properties"].(map[string]any)
	for name, sub := range in {
		if !required[name] && isFreeFormMap(sub) {
			continue
		}
		s := strictNode(sub)
		if !required[name] {
			s = nullable(s)
		}
		props[name] = s
		names = append(names, name)
	}
	slices.Sort(names)
	req := make([]any, len(names))
	for i, n := range names {
		req[i] = n
	}
	out["type"] = "object"
	out["properties"] = props
	out["required"] = req
	out["additionalProperties"] = false
	return out
}

// isObjectSchema reports whether s describes an object with named properties
// (or an object of no particular shape, which strict mode makes empty).
func isObjectSchema(s map[string]any) bool {
	if _, ok := s["properties"]; ok {
		return true
	}
	t, _ := s["type"].(string)
	return t == "object"
}

// isFreeFormMap reports whether s is an object whose keys are free
// (additionalProperties a schema or true, no properties).
func isFreeFormMap(v any) bool {
	s, ok := v.(map[string]any)
	if !ok || s["type"] != "object" {
		return false
	}
	if _, ok := s["properties"]; ok {
		return false
	}
	switch ap := s["additionalProperties"].(type) {
	case map[string]any:
		return true
	case bool:
		return ap
	}
	return false
}

// nullable makes a (strict) schema also accept null.
func nullable(v any) any {
	s, ok := v.(map[string]any)
	if !ok {
		return v
	}
	switch t := s["type"].(type) {
	case string:
		if t != "null" {
			s["type"] = []any{t, "null"}
		}
	case []any:
		if !slices.Contains(t, any("null")) {
			s["type"] = append(t, "null")
		}
	default:
		if list, ok := s["anyOf"].([]any); ok {
			s["anyOf"] = append(list, map[string]any{"type": "null"})
		} else {
			return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
		return s
	}
	if e, ok := s["enum"].([]any); ok && !slices.Contains(e, nil) {
		s["enum"] = append(e, nil)
	}
	return s
}
