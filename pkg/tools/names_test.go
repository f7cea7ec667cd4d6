package tools_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// editorRegistry holds a tool with the operations other agents' edit verbs
// map to (apply_patch, str_replace_based_edit_tool), as file_operations
// will have them.
func editorRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	r := tools.NewRegistry()
	obj := json.RawMessage(`{"type":"object","properties":{"input":{"type":"string"},"command":{"type":"string"},"path":{"type":"string"}},"additionalProperties":false}`)
	if err := r.Register(&fakeTool{spec: tools.Spec{Name: "file_operations", Operations: []tools.OperationSpec{
		{Name: "read_file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		{Name: "apply_patch", Schema: obj},
		{Name: "str_replace_based_edit_tool", Schema: obj},
	}}}); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResolveVerbsAndVariants(t *testing.T) {
	r := editorRegistry(t)
	tests := []struct {
		name, args string
		wantOp     string
		wantArgs   string
		wantRule   string // substring of the name coercion's rule; "" when none expected
		wantErr    string
	}{
		{name: "apply_patch", args: `{"input":"*** Begin Patch\n*** End Patch"}`, wantOp: "apply_patch", wantArgs: `{"input":"*** Begin Patch\n*** End Patch"}`},
		{name: "functions.apply_patch", args: `{"input":"x"}`, wantOp: "apply_patch", wantRule: `provider prefix "functions." removed`},
		{name: "str_replace_editor", args: `{"command":"view","path":"a"}`, wantOp: "str_replace_based_edit_tool", wantRule: `"str_replace_editor" is toold's str_replace_based_edit_tool`},
		{name: "str_replace_based_edit_tool", args: `{"command":"view","path":"a"}`, wantOp: "str_replace_based_edit_tool"},
		{name: "text_editor", args: `{"command":"view","path":"a"}`, wantOp: "str_replace_based_edit_tool", wantRule: "toold's str_replace_based_edit_tool"},
		// "input" is an argument of the tool: the envelope is not unwrapped.
		{name: "apply_patch", args: `{"input":{"path":"a"}}`, wantOp: "apply_patch", wantArgs: `{"input":{"path":"a"}}`},
		{name: "view", args: `{"path":"a"}`, wantOp: "read_file", wantRule: "toold's read_file"},
		{name: "file_operations.aply_patch", args: `{}`, wantErr: `did you mean "file_operations.apply_patch"`},
	}
	for _, tt := range tests {
		t.Run(tt.name+tt.args, func(t *testing.T) {
			args, err := tools.DecodeArguments(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			tg, err := r.Resolve(tt.name, args)
			if tt.wantErr != "" {
				if !errors.Is(err, errdefs.ErrToolNotFound) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want TOOL_NOT_FOUND containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tg.Operation != tt.wantOp {
				t.Fatalf("resolved %s, want %s", tg.Operation, tt.wantOp)
			}
			cs := tg.Repairs()
			var rule string
			for _, c := range cs {
				if c.Field == tools.NameField {
					rule = c.Rule
				}
			}
			if (tt.wantRule == "") != (rule == "") || !strings.Contains(rule, tt.wantRule) {
				t.Fatalf("name coercion rule %q, want %q", rule, tt.wantRule)
			}
			if tt.wantArgs != "" {
				b, _ := json.Marshal(args)
				if string(b) != tt.wantArgs {
					t.Fatalf("args %s, want %s", b, tt.wantArgs)
				}
			}
		})
	}
}

func TestRepairArgumentText(t *testing.T) {
	tests := []struct {
		in, want, rule string
	}{
		{in: `{"query": "what's up"}`, want: `{"query":"what's up"}`},
		{in: `{'query': "what's up"}`, want: `{"query":"what's up"}`, rule: "Python literal"},
		{in: `{'a': 'it\'s', 'b': None, 'c': [True, False]}`, want: `{"a":"it's","b":null,"c":[true,false]}`, rule: "Python literal"},
		{in: `{"a": "x,}", "b": [1,],}`, want: `{"a":"x,}","b":[1]}`, rule: "trailing commas"},
		{in: "```json\n{\"a\": 1}\n```", want: `{"a":1}`, rule: "fence"},
		{in: `"{\"a\": 1}"`, want: `{"a":1}`, rule: "double-encoded"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			m, cs, err := tools.DecodeArgumentsReport(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(m)
			if string(b) != tt.want {
				t.Fatalf("got %s, want %s", b, tt.want)
			}
			if tt.rule == "" {
				if len(cs) != 0 {
					t.Fatalf("unexpected repair %+v", cs)
				}
				return
			}
			if len(cs) != 1 || !strings.Contains(cs[0].Rule, tt.rule) {
				t.Fatalf("repairs %+v, want one with %q", cs, tt.rule)
			}
		})
	}
}
