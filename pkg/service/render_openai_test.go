package service

import (
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
)

func TestOpenAIStrictSchema(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"all required stays as is", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
			`{"additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}`},
		{"optional becomes required and nullable", `{"type":"object","properties":{"p":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["p"]}`,
			`{"additionalProperties":false,"properties":{"n":{"minimum":1,"type":["integer","null"]},"p":{"type":"string"}},"required":["n","p"],"type":"object"}`},
		{"type lists and enums get null", `{"type":"object","properties":{"u":{"type":["string","integer"]},"e":{"type":"string","enum":["a","b"]}}}`,
			`{"additionalProperties":false,"properties":{"e":{"enum":["a","b",null],"type":["string","null"]},"u":{"type":["string","integer","null"]}},"required":["e","u"],"type":"object"}`},
		{"already nullable", `{"type":"object","properties":{"x":{"type":["string","null"]}}}`,
			`{"additionalProperties":false,"properties":{"x":{"type":["string","null"]}},"required":["x"],"type":"object"}`},
		{"untyped optional wrapped in anyOf", `{"type":"object","properties":{"x":{"description":"any"},"y":{"anyOf":[{"type":"string"}]}}}`,
			`{"additionalProperties":false,"properties":{"x":{"anyOf":[{"description":"any"},{"type":"null"}]},"y":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["x","y"],"type":"object"}`},
		{"nested objects and array items", `{"type":"object","properties":{"o":{"type":"object","properties":{"d":{"type":"boolean"}}},"l":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]}}},"required":["o","l"]}`,
			`{"additionalProperties":false,"properties":{"l":{"items":{"additionalProperties":false,"properties":{"k":{"type":"string"}},"required":["k"],"type":"object"},"type":"array"},"o":{"additionalProperties":false,"properties":{"d":{"type":["boolean","null"]}},"required":["d"],"type":"object"}},"required":["l","o"],"type":"object"}`},
		{"unsupported keywords dropped", `{"$schema":"x","type":"object","properties":{"s":{"type":"string","minLength":1,"default":"a","pattern":"^a"}},"required":["s"]}`,
			`{"additionalProperties":false,"properties":{"s":{"pattern":"^a","type":"string"}},"required":["s"],"type":"object"}`},
		{"optional free-form maps left out", `{"type":"object","properties":{"c":{"type":"string"},"env":{"type":"object","additionalProperties":{"type":"string"}}},"required":["c"]}`,
			`{"additionalProperties":false,"properties":{"c":{"type":"string"}},"required":["c"],"type":"object"}`},
		{"no properties at all", `{"type":"object"}`, `{"additionalProperties":false,"properties":{},"required":[],"type":"object"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := openAIStrictSchema(json.RawMessage(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("openAIStrictSchema(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestRenderStrictOnlyForOpenAI(t *testing.T) {
	for _, f := range []pb.ToolFormat{pb.ToolFormat_TOOL_FORMAT_UNSPECIFIED, pb.ToolFormat_TOOL_FORMAT_ANTHROPIC, pb.ToolFormat_TOOL_FORMAT_GEMINI, pb.ToolFormat_TOOL_FORMAT_MCP} {
		if _, err := render(nil, f, false, true); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%v with strict: %v, want InvalidArgument", f, err)
		}
	}
	if _, err := render(nil, pb.ToolFormat_TOOL_FORMAT_OPENAI, false, true); err != nil {
		t.Errorf("OPENAI with strict: %v", err)
	}
}
