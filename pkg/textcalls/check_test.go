package textcalls_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/textcalls"
	"github.com/toold/toold/pkg/tools"
)

var update = flag.Bool("update", false, "rewrite the golden prompts in testdata/prompts")

type fakeTool struct{ spec tools.Spec }

func (f *fakeTool) Spec() tools.Spec                  { return f.spec }
func (f *fakeTool) Describe(*tools.Call) tools.Effect { return tools.Effect{} }
func (f *fakeTool) Run(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
	return &tools.Result{}, nil
}

func registry(t *testing.T) *tools.Registry {
	t.Helper()
	r := tools.NewRegistry()
	err := r.Register(
		&fakeTool{spec: tools.Spec{Name: "file_operations", Description: "Read and list files.", Operations: []tools.OperationSpec{
			{Name: "read_file", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"File to read."},"limit":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`)},
			{Name: "list_dir", Description: "List a directory.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}`)},
		}}},
		&fakeTool{spec: tools.Spec{Name: "web_search", Description: "Search the web.", Operations: []tools.OperationSpec{
			{Name: "web_search", Description: "Search the web.", Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"safe":{"type":"boolean"}},"required":["query"],"additionalProperties":false}`)},
		}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCheck runs parsed calls through resolution, repair and coercion.
func TestCheck(t *testing.T) {
	r := registry(t)
	tests := []struct {
		text          string
		wantTool      string
		wantOp        string
		wantArgs      string
		wantCoercions []string // fields
		wantErr       error
		wantMsg       string
	}{
		{text: "TOOL_CALL: functions.read_file(path=main.go, limit=20)", wantTool: "file_operations", wantOp: "read_file", wantArgs: `{"limit":20,"path":"main.go"}`, wantCoercions: []string{"name"}},
		{text: `<tool_call>{"name": "read_file", "arguments": {"path": "a.go", "limit": "5"}}</tool_call>`, wantTool: "file_operations", wantOp: "read_file", wantArgs: `{"limit":5,"path":"a.go"}`, wantCoercions: []string{"/limit"}},
		{text: `<tool_call>{"name": "read_file", "arguments": "{\"path\": \"a.go\"}"}</tool_call>`, wantTool: "file_operations", wantOp: "read_file", wantArgs: `{"path":"a.go"}`},
		{text: "<tool_call>\n<function=web_search>\n<parameter=query>\ngo\n</parameter>\n<parameter=safe>\nTrue\n</parameter>\n</function>\n</tool_call>", wantTool: "web_search", wantOp: "web_search", wantArgs: `{"query":"go","safe":true}`, wantCoercions: []string{"/safe"}},
		{text: "```tool_code\nprint(default_api.web_search(query=\"go\", limit=3))\n```", wantTool: "web_search", wantOp: "web_search", wantArgs: `{"limit":3,"query":"go"}`, wantCoercions: []string{"name"}},
		{text: `[TOOL_CALLS] [{"name": "file_operations.raed_file", "arguments": {"path": "a"}}]`, wantErr: errdefs.ErrToolNotFound, wantMsg: `did you mean "file_operations.read_file"`},
		{text: `{"name": "read_file", "parameters": {"path": 1, "extra": true}}`, wantTool: "file_operations", wantOp: "read_file", wantErr: errdefs.ErrInvalidArgument, wantMsg: `unknown argument "extra"`},
		{text: "<tool_call>\n{broken\n</tool_call>", wantErr: errdefs.ErrInvalidArgument, wantMsg: "does not hold a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			res, err := textcalls.Parse(tt.text, textcalls.Auto)
			if err != nil || len(res.Calls) != 1 {
				t.Fatalf("parse: %v, %+v", err, res)
			}
			got := textcalls.Check(r, res.Calls[0])
			if tt.wantErr != nil {
				if !errors.Is(got.Err, tt.wantErr) || !strings.Contains(got.Err.Error(), tt.wantMsg) {
					t.Fatalf("err = %v, want %v containing %q", got.Err, tt.wantErr, tt.wantMsg)
				}
			} else if got.Err != nil {
				t.Fatal(got.Err)
			}
			if got.Tool != tt.wantTool || got.Operation != tt.wantOp {
				t.Fatalf("resolved %s.%s, want %s.%s", got.Tool, got.Operation, tt.wantTool, tt.wantOp)
			}
			if tt.wantArgs != "" && got.Arguments != tt.wantArgs {
				t.Fatalf("arguments %s, want %s", got.Arguments, tt.wantArgs)
			}
			for _, f := range tt.wantCoercions {
				found := false
				for _, c := range got.Coercions {
					found = found || c.Field == f
				}
				if !found {
					t.Fatalf("no coercion of %q reported: %+v", f, got.Coercions)
				}
			}
		})
	}
}

// TestRenderPrompt compares each format's prompt with its golden file and
// checks that a call written as the prompt asks parses back.
func TestRenderPrompt(t *testing.T) {
	infos := registry(t).List()
	// A call in each format, as the prompt tells the model to write it.
	answers := map[textcalls.Format]string{
		textcalls.Hermes:   "<tool_call>\n{\"name\": \"web_search\", \"arguments\": {\"query\": \"go\"}}\n</tool_call>",
		textcalls.Llama3:   `{"name": "web_search", "parameters": {"query": "go"}}`,
		textcalls.Mistral:  `[TOOL_CALLS] [{"name": "web_search", "arguments": {"query": "go"}}]`,
		textcalls.DeepSeek: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>web_search<｜tool▁sep｜>{"query": "go"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
		textcalls.ToolCode: "```tool_code\nweb_search(query=\"go\")\n```",
		textcalls.JSON:     "```json\n{\"name\": \"web_search\", \"arguments\": {\"query\": \"go\"}}\n```",
		textcalls.Legacy:   `TOOL_CALL: web_search {"query": "go"}`,
		textcalls.SWEAgent: "DISCUSSION\nSearch first.\n```\nweb_search {\"query\": \"go\"}\n```",
	}
	for _, f := range textcalls.Formats {
		t.Run(string(f), func(t *testing.T) {
			got, err := textcalls.RenderPrompt(infos, f, false)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := textcalls.RenderPrompt(infos, f, false)
			if again != got {
				t.Fatal("rendering is not deterministic")
			}
			golden := filepath.Join("testdata", "prompts", string(f)+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("prompt differs from %s (go test -update to accept):\n%s", golden, got)
			}
			for _, name := range []string{"file_operations", "web_search"} {
				if !strings.Contains(got, name) {
					t.Fatalf("prompt does not list %s", name)
				}
			}
			res, err := textcalls.Parse(answers[f], f)
			if err != nil || len(res.Calls) != 1 || res.Calls[0].Name != "web_search" {
				t.Fatalf("the call the prompt asks for does not parse back: %+v %v", res, err)
			}
		})
	}
	flat, err := textcalls.RenderPrompt(infos, textcalls.Hermes, true)
	if err != nil || !strings.Contains(flat, `"name":"read_file"`) {
		t.Fatalf("flat rendering lacks the operations: %v\n%s", err, flat)
	}
	for _, bad := range []textcalls.Format{textcalls.Auto, "klingon"} {
		if _, err := textcalls.RenderPrompt(infos, bad, false); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Fatalf("format %q: err = %v, want INVALID_ARGUMENTS", bad, err)
		}
	}
}
