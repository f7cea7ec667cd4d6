package tools

import (
	"reflect"
	"testing"
)

// flatCases are argument texts on both sides of the flat path's edge: what
// it reads must be exactly what the general path reads, and what it leaves
// (escapes, nesting, bad or odd JSON) goes to the general path.
var flatCases = []struct {
	text string
	flat bool // the flat path reads it
}{
	{`{}`, true},
	{` { } `, true},
	{`{"thought":"plan the change"}`, true},
	{"\t{\"a\" : 1 ,\r\n\"b\":-0.5e+3, \"c\":true,\"d\":false,\"e\":null}\n", true},
	{`{"path":"/tmp/x","limit":20,"offset":0}`, true},
	{`{"a":1,"a":2}`, true}, // the last one wins, as in encoding/json
	{`{"ünïcode":"✓ 日本"}`, true},
	{`{"n":12345678901234567890123}`, true},
	{`{"a":"x\ny"}`, false},  // an escape
	{`{"a":{"b":1}}`, false}, // nested
	{`{"a":[1,2]}`, false},   // nested
	{`{"a":1,}`, false},      // trailing comma: repaired by the general path
	{`{'a': 'b'}`, false},    // Python literal: repaired
	{"```json\n{\"a\":1}\n```", false},
	{`"{\"a\":1}"`, false}, // double-encoded: repaired
	{`{"a":01}`, false},
	{`{"a":1.}`, false},
	{`{"a":-}`, false},
	{`{"a":1e}`, false},
	{`{"a":+1}`, false},
	{`{"a":truex}`, false},
	{`{"a":True}`, false},
	{`{"a" 1}`, false},
	{`{"a":1 "b":2}`, false},
	{`{"a":1}x`, false},
	{`{"a":1}{}`, false},
	{`{"a":"b`, false},
	{`{"a":`, false},
	{`{`, false},
	{``, false},
	{`   `, false},
	{`[1]`, false},
	{`null`, false},
	{"{\"a\":\"\x01\"}", false},
	{"{\"a\":\"\xff\"}", false}, // invalid UTF-8: the general path replaces it
	{"{\"a\":1}\v", false},
}

func TestDecodeFlatAsGeneral(t *testing.T) {
	for _, tc := range flatCases {
		checkFlat(t, tc.text)
		if _, ok := decodeFlat(tc.text); ok != tc.flat {
			t.Errorf("decodeFlat(%q) read it: %v, want %v", tc.text, ok, tc.flat)
		}
	}
}

// checkFlat fails when the flat path reads text otherwise than the general
// path, or reads what the general path refuses.
func checkFlat(t *testing.T, text string) {
	t.Helper()
	m, ok := decodeFlat(text)
	if !ok {
		return
	}
	v, err := decodeJSON(text)
	if err != nil {
		t.Fatalf("decodeFlat read %q, which the general path refuses: %v", text, err)
	}
	if !reflect.DeepEqual(any(m), v) {
		t.Fatalf("decodeFlat(%q) = %#v; the general path reads %#v", text, m, v)
	}
}

func FuzzDecodeFlat(f *testing.F) {
	for _, tc := range flatCases {
		f.Add(tc.text)
	}
	f.Fuzz(checkFlat)
}
