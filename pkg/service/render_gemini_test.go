package service

import (
	"encoding/json"
	"testing"
)

func TestGeminiSchema(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"kept as is", `{"type":"object","properties":{"a":{"type":"string","minLength":1,"pattern":"^x"}},"required":["a"],"additionalProperties":false}`,
			`{"additionalProperties":false,"properties":{"a":{"minLength":1,"pattern":"^x","type":"string"}},"required":["a"],"type":"object"}`},
		{"$schema dropped", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{}}`,
			`{"properties":{},"type":"object"}`},
		{"exclusive bounds become inclusive", `{"type":"object","properties":{"t":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":10}}}`,
			`{"properties":{"t":{"maximum":10,"minimum":0,"type":"number"}},"type":"object"}`},
		{"an inclusive bound wins", `{"type":"number","exclusiveMinimum":0,"minimum":1}`, `{"minimum":1,"type":"number"}`},
		{"draft 4 boolean exclusives dropped", `{"type":"number","minimum":0,"exclusiveMinimum":true}`, `{"minimum":0,"type":"number"}`},
		{"const becomes enum", `{"type":"string","const":"x"}`, `{"enum":["x"],"type":"string"}`},
		{"unknown keywords dropped at every depth", `{"type":"object","not":{},"properties":{"l":{"type":"array","items":{"type":"string","contentEncoding":"base64"},"uniqueItems":true}},"$defs":{"d":{"type":"integer","multipleOf":2}},"anyOf":[{"if":{}}]}`,
			`{"$defs":{"d":{"type":"integer"}},"anyOf":[{}],"properties":{"l":{"items":{"type":"string"},"type":"array"}},"type":"object"}`},
		{"property names are not keywords", `{"type":"object","properties":{"not":{"type":"string"},"$schema":{"type":"string"}}}`,
			`{"properties":{"$schema":{"type":"string"},"not":{"type":"string"}},"type":"object"}`},
		{"map values stay schemas", `{"type":"object","additionalProperties":{"type":"string","exclusiveMinimum":1}}`,
			`{"additionalProperties":{"minimum":1,"type":"string"},"type":"object"}`},
		{"large numbers keep their digits", `{"type":"integer","maximum":9007199254740993}`, `{"maximum":9007199254740993,"type":"integer"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := geminiSchema(json.RawMessage(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("geminiSchema(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
	if _, err := geminiSchema(json.RawMessage(`{"type":`)); err == nil {
		t.Error("bad JSON: no error")
	}
}
