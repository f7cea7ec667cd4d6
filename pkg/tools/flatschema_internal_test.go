package tools

import (
	"encoding/json"
	"testing"
)

// flatSchemas are schemas with a flat form (some of whose properties it
// leaves to the library: a keyword it does not read, a nested object) and
// one without (a keyword it does not read at the top).
var flatSchemas = []string{
	string(thinkSchema),
	`{"type":"object","properties":{"path":{"type":"string","description":"d"},"offset":{"type":"integer","default":1},"limit":{"type":"integer"},"ratio":{"type":"number"},"all":{"type":"boolean"}},"required":["path"],"additionalProperties":false}`,
	`{"type":"object","properties":{"mode":{"type":"string","enum":["a","b",1]},"n":{"type":"integer","minimum":1},"s":{"type":"string","pattern":"^x"},"t":{"type":["string","null"]}}}`,
	`{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":true,"required":["x","y"]}`,
	`{"type":"object","properties":{"e":{"enum":["a"]},"o":{"type":"object"}},"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"type":"string"}},"minProperties":2}`,
	`{"type":"object"}`,
}

// flatArgs are argument texts, each tried against every schema.
var flatArgs = []string{
	`{}`, `{"thought":"x"}`, `{"thought":""}`, `{"thought":1}`, `{"thought":null}`, `{"thought":"x","extra":1}`, `{"thought":["x"]}`,
	`{"path":"a"}`, `{"path":"a","offset":5,"limit":-3}`, `{"path":"a","offset":5.0}`, `{"path":"a","offset":1e3}`, `{"path":"a","offset":"5"}`,
	`{"path":"a","ratio":0.5}`, `{"path":"a","ratio":-1.25e-3}`, `{"path":"a","all":true}`, `{"path":"a","all":"true"}`, `{"path":1}`,
	`{"mode":"a"}`, `{"mode":"c"}`, `{"mode":1}`, `{"n":0}`, `{"n":2}`, `{"s":"xy"}`, `{"s":"y"}`, `{"t":null}`, `{"t":"v"}`,
	`{"x":"1"}`, `{"x":"1","y":2}`, `{"e":"a"}`, `{"e":"b"}`, `{"o":{}}`, `{"a":"1"}`, `{"a":"1","b":2}`,
}

// The flat form only ever says yes where the compiled schema says yes:
// every schema against every argument set.
func TestFlatSchemaAgrees(t *testing.T) {
	fast := 0
	for i, s := range flatSchemas {
		for _, a := range flatArgs {
			if checkFlatSchema(t, s, a) {
				fast++
			}
		}
		c, _ := parseSchema("t.t", json.RawMessage(s))
		if (c.flat != nil) != (i != 5) { // minProperties is not read
			t.Errorf("schema %d has a flat form: %v", i, c.flat != nil)
		}
	}
	if fast == 0 {
		t.Fatal("the flat form accepted nothing")
	}
}

// checkFlatSchema checks one pair, reporting whether the flat form
// accepted it.
func checkFlatSchema(t *testing.T, schema, args string) bool {
	t.Helper()
	c, err := parseSchema("t.t", json.RawMessage(schema))
	if err != nil {
		return false
	}
	if _, err := c.compiled(); err != nil || c.flat == nil {
		return false
	}
	v, err := decodeJSON(args)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return false
	}
	if !c.flat.accepts(m) {
		return false
	}
	s, _ := c.compiled()
	if err := s.Validate(any(m)); err != nil {
		t.Errorf("schema %s: the flat form accepts %s, the compiled schema refuses it: %v", schema, args, err)
	}
	return true
}

func FuzzFlatSchema(f *testing.F) {
	for _, a := range flatArgs {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, args string) {
		for _, s := range flatSchemas {
			checkFlatSchema(t, s, args)
		}
	})
}
