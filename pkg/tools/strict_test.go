package tools_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// OpenAI's strict mode makes a model send every property of a consolidated
// tool, null for those the chosen operation does not take.
func TestPrepareDropsForeignNulls(t *testing.T) {
	r := testRegistry(t)
	tests := []struct {
		name, tool, args string
		want             string
		coercions        []tools.Coercion
		invalidField     string
	}{
		{name: "other operations' properties as null", tool: "file_operations",
			args: `{"operation":"list_dir","path":"a","content":null,"limit":null}`, want: `{"path":"a"}`,
			coercions: []tools.Coercion{
				{Field: "/content", From: "null", Rule: "null for an argument this operation does not take removed"},
				{Field: "/limit", From: "null", Rule: "null for an argument this operation does not take removed"},
			}},
		{name: "flat name, a sibling's property as null", tool: "read_file", args: `{"path":"a","content":null}`, want: `{"path":"a"}`,
			coercions: []tools.Coercion{{Field: "/content", From: "null", Rule: "null for an argument this operation does not take removed"}}},
		{name: "own optional null still removed by its own rule", tool: "file_operations",
			args: `{"operation":"read_file","path":"a","limit":null,"content":null}`, want: `{"path":"a"}`,
			coercions: []tools.Coercion{
				{Field: "/content", From: "null", Rule: "null for an argument this operation does not take removed"},
				{Field: "/limit", From: "null", Rule: "null for optional argument removed"},
			}},
		{name: "a null nobody takes is still reported", tool: "read_file", args: `{"path":"a","pth":null}`, invalidField: "/pth"},
		{name: "a sibling's property with a value is still reported", tool: "file_operations",
			args: `{"operation":"list_dir","path":"a","content":"x"}`, invalidField: "/content"},
		{name: "single-operation tools are left alone", tool: "everything__echo", args: `{"message":"m","other":null}`, want: `{"message":"m","other":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := tools.DecodeArguments(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			tg, err := r.Resolve(tt.tool, args)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := tg.Prepare(args)
			cs = append(tg.Repairs(), cs...)
			if tt.invalidField != "" {
				if err == nil {
					t.Fatalf("no error; args %v", args)
				}
				var e *errdefs.Error
				if !errors.As(err, &e) || e.Field != tt.invalidField {
					t.Fatalf("error %v does not name %s", err, tt.invalidField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(args)
			if string(b) != tt.want {
				t.Fatalf("args = %s, want %s", b, tt.want)
			}
			if !reflect.DeepEqual(cs, tt.coercions) {
				t.Fatalf("coercions = %+v, want %+v", cs, tt.coercions)
			}
		})
	}
}
