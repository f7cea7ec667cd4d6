package service

import (
	"bytes"
	"encoding/json"
)

// geminiKeywords are the JSON Schema keywords Gemini accepts in a function
// declaration's parametersJsonSchema (its documented JSON Schema subset, plus
// the fields of its OpenAPI-style Schema: default, example, nullable,
// length, pattern and property-count bounds, propertyOrdering).
var geminiKeywords = map[string]bool{
	"$id": true, "$defs": true, "$ref": true, "$anchor": true,
	"type": true, "format": true, "title": true, "description": true, "enum": true,
	"items": true, "prefixItems": true, "minItems": true, "maxItems": true,
	"minimum": true, "maximum": true, "anyOf": true, "oneOf": true, "allOf": true,
	"properties": true, "additionalProperties": true, "required": true, "propertyOrdering": true,
	"default": true, "example": true, "nullable": true, "minLength": true, "maxLength": true,
	"pattern": true, "minProperties": true, "maxProperties": true,
}

// geminiSchema returns a tool's JSON Schema restricted to the keywords
// Gemini accepts: "$schema" and other unknown keywords are dropped,
// exclusiveMinimum/exclusiveMaximum become minimum/maximum (when those are
// not set), const becomes a one-value enum. The model sees a slightly looser
// bound; toold still validates every call against the full schema.
func geminiSchema(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var s any
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return json.Marshal(geminiNode(s))
}

func geminiNode(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		switch k {
		case "properties", "$defs":
			if props, ok := x.(map[string]any); ok {
				p := make(map[string]any, len(props))
				for name, sub := range props {
					p[name] = geminiNode(sub)
				}
				out[k] = p
			}
		case "items", "additionalProperties":
			out[k] = geminiNode(x)
		case "anyOf", "oneOf", "allOf", "prefixItems":
			if list, ok := x.([]any); ok {
				l := make([]any, len(list))
				for i, sub := range list {
					l[i] = geminiNode(sub)
				}
				out[k] = l
			}
		case "exclusiveMinimum", "exclusiveMaximum":
			// Numeric (draft 6+) bounds only; draft 4's booleans just go.
			bound := map[string]string{"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"}[k]
			if n, ok := x.(json.Number); ok {
				if _, set := m[bound]; !set {
					out[bound] = n
				}
			}
		case "const":
			if _, set := m["enum"]; !set {
				out["enum"] = []any{x}
			}
		default:
			if geminiKeywords[k] {
				out[k] = x
			}
		}
	}
	return out
}
