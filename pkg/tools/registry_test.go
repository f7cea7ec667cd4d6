package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// fakeTool is a func-field fake.
type fakeTool struct {
	spec tools.Spec
	run  func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error)
}

func (f *fakeTool) Spec() tools.Spec                    { return f.spec }
func (f *fakeTool) Describe(c *tools.Call) tools.Effect { return tools.Effect{Display: c.Operation} }
func (f *fakeTool) Run(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
	if f.run == nil {
		return &tools.Result{}, nil
	}
	return f.run(ctx, c, s)
}

const readSchema = `{"type":"object","properties":{
  "path":{"type":"string","description":"File to read."},
  "offset":{"type":"integer","minimum":1},
  "limit":{"type":"integer","minimum":1,"maximum":5000},
  "ratio":{"type":"number"},
  "binary":{"type":"boolean"},
  "tags":{"type":"array","items":{"type":"integer"}},
  "opts":{"type":"object","properties":{"deep":{"type":"boolean"}},"additionalProperties":false},
  "note":{"type":["string","null"]}
},"required":["path"],"additionalProperties":false}`

func testRegistry(t testing.TB) *tools.Registry {
	t.Helper()
	r := tools.NewRegistry()
	err := r.Register(
		&tools.Think{},
		&fakeTool{spec: tools.Spec{Name: "file_operations", Source: "builtin", Operations: []tools.OperationSpec{
			{Name: "read_file", Risk: tools.RiskLow, Schema: json.RawMessage(readSchema)},
			{Name: "list_dir", Risk: tools.RiskLow, Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}`)},
			{Name: "write_file", Risk: tools.RiskMedium, Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`)},
		}}},
		&fakeTool{spec: tools.Spec{Name: "user_collaboration", Aliases: []string{"ask_user"}, Operations: []tools.OperationSpec{
			{Name: "user_collaboration", Risk: tools.RiskLow, Schema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`)},
		}}},
		&fakeTool{spec: tools.Spec{Name: "everything__echo", Source: "mcp:everything", Operations: []tools.OperationSpec{
			{Name: "everything__echo", Risk: tools.RiskMedium, Schema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)},
		}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResolve(t *testing.T) {
	r := testRegistry(t)
	tests := []struct {
		name     string
		tool     string
		args     string
		wantTool string
		wantOp   string
		wantErr  error
		wantMsg  string // substring of the error message
		wantSug  []string
		leftArgs string // args after resolution (the selector removed)
	}{
		{name: "simple tool", tool: "think", args: `{"thought":"x"}`, wantTool: "think", wantOp: "think", leftArgs: `{"thought":"x"}`},
		{name: "consolidated with operation", tool: "file_operations", args: `{"operation":"read_file","path":"a"}`, wantTool: "file_operations", wantOp: "read_file", leftArgs: `{"path":"a"}`},
		{name: "dotted", tool: "file_operations.read_file", args: `{"path":"a"}`, wantTool: "file_operations", wantOp: "read_file", leftArgs: `{"path":"a"}`},
		{name: "dotted with same operation arg", tool: "file_operations.list_dir", args: `{"operation":"list_dir"}`, wantTool: "file_operations", wantOp: "list_dir", leftArgs: `{}`},
		{name: "flat", tool: "read_file", args: `{"path":"a"}`, wantTool: "file_operations", wantOp: "read_file", leftArgs: `{"path":"a"}`},
		{name: "alias", tool: "ask_user", args: `{"prompt":"ok?"}`, wantTool: "user_collaboration", wantOp: "user_collaboration"},
		{name: "mcp double underscore", tool: "everything__echo", args: `{}`, wantTool: "everything__echo", wantOp: "everything__echo"},
		{name: "mcp dotted", tool: "everything.echo", args: `{}`, wantTool: "everything__echo", wantOp: "everything__echo"},
		{name: "unknown with suggestion", tool: "raed_file", args: `{}`, wantErr: errdefs.ErrToolNotFound, wantMsg: `did you mean "read_file"`, wantSug: []string{"read_file"}},
		{name: "unknown far away", tool: "launch_rockets", args: `{}`, wantErr: errdefs.ErrToolNotFound, wantMsg: `no tool named "launch_rockets"`},
		{name: "empty name", tool: "", args: `{}`, wantErr: errdefs.ErrToolNotFound, wantMsg: "empty"},
		{name: "missing operation", tool: "file_operations", args: `{"path":"a"}`, wantErr: errdefs.ErrInvalidArgument, wantMsg: "read_file, list_dir, write_file"},
		{name: "unknown operation", tool: "file_operations", args: `{"operation":"read_fil"}`, wantErr: errdefs.ErrInvalidArgument, wantMsg: `did you mean "read_file"`},
		{name: "operation not a string", tool: "file_operations", args: `{"operation":3}`, wantErr: errdefs.ErrInvalidArgument, wantMsg: "must be a string"},
		{name: "flat name contradicted by operation", tool: "read_file", args: `{"operation":"write_file"}`, wantErr: errdefs.ErrInvalidArgument, wantMsg: `selects "read_file"`},
		{name: "dotted unknown operation", tool: "file_operations.nope", args: `{}`, wantErr: errdefs.ErrToolNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := tools.DecodeArguments(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			tg, err := r.Resolve(tt.tool, args)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want class %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("err = %q, want it to contain %q", err, tt.wantMsg)
				}
				if tt.wantSug != nil {
					var de *errdefs.Error
					errors.As(err, &de)
					if !reflect.DeepEqual(de.Suggestions, tt.wantSug) {
						t.Fatalf("suggestions = %v, want %v", de.Suggestions, tt.wantSug)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tg.ToolName != tt.wantTool || tg.Operation != tt.wantOp {
				t.Fatalf("resolved %s.%s, want %s.%s", tg.ToolName, tg.Operation, tt.wantTool, tt.wantOp)
			}
			if tt.leftArgs != "" {
				b, _ := json.Marshal(args)
				if string(b) != tt.leftArgs {
					t.Fatalf("args = %s, want %s", b, tt.leftArgs)
				}
			}
		})
	}
}

func TestDecodeArguments(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
		want    string
	}{
		{in: ``, want: `{}`},
		{in: `  `, want: `{}`},
		{in: `{"a":1}`, want: `{"a":1}`},
		{in: `{"n":12345678901234567890}`, want: `{"n":12345678901234567890}`},
		{in: `{"a":`, wantErr: "not valid JSON"},
		{in: `{'a':1}`, want: `{"a":1}`},
		{in: `{"a":`, wantErr: `received: {"a":`},
		{in: `[1,2]`, wantErr: "must be a JSON object, got an array"},
		{in: `"text"`, wantErr: "must be a JSON object, got a string"},
		{in: `null`, wantErr: "must be a JSON object, got null"},
		{in: `{"a":1} {"b":2}`, wantErr: "not valid JSON"},
		{in: `{"a":1} x`, wantErr: `invalid character 'x' after top-level value`},
		{in: "{\"a\":1}\n\t ", want: `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, _, err := tools.DecodeArgumentsReport(tt.in)
			if tt.wantErr != "" {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want INVALID_ARGUMENTS containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tt.want {
				t.Fatalf("got %s, want %s", b, tt.want)
			}
		})
	}
}

func TestPrepareCoercion(t *testing.T) {
	r := testRegistry(t)
	tests := []struct {
		name      string
		args      string
		want      string
		coercions []tools.Coercion
	}{
		{name: "nothing to do", args: `{"path":"a","limit":5}`, want: `{"limit":5,"path":"a"}`},
		{name: "string to integer", args: `{"path":"a","limit":"42"}`, want: `{"limit":42,"path":"a"}`,
			coercions: []tools.Coercion{{Field: "/limit", From: `"42"`, To: `42`, Rule: "string to integer"}}},
		{name: "integral float string to integer", args: `{"path":"a","offset":"3.0"}`, want: `{"offset":3,"path":"a"}`,
			coercions: []tools.Coercion{{Field: "/offset", From: `"3.0"`, To: `3`, Rule: "string to integer"}}},
		{name: "string to number", args: `{"path":"a","ratio":" 0.5"}`, want: `{"path":"a","ratio":0.5}`,
			coercions: []tools.Coercion{{Field: "/ratio", From: `" 0.5"`, To: `0.5`, Rule: "string to number"}}},
		{name: "string to boolean", args: `{"path":"a","binary":"True"}`, want: `{"binary":true,"path":"a"}`,
			coercions: []tools.Coercion{{Field: "/binary", From: `"True"`, To: `true`, Rule: "string to boolean"}}},
		{name: "null string removed", args: `{"path":"a","limit":"null"}`, want: `{"path":"a"}`,
			coercions: []tools.Coercion{{Field: "/limit", From: `"null"`, Rule: "null for optional argument removed"}}},
		{name: "None removed", args: `{"path":"a","offset":"None"}`, want: `{"path":"a"}`,
			coercions: []tools.Coercion{{Field: "/offset", From: `"None"`, Rule: "null for optional argument removed"}}},
		{name: "json null removed", args: `{"path":"a","binary":null}`, want: `{"path":"a"}`,
			coercions: []tools.Coercion{{Field: "/binary", From: `null`, Rule: "null for optional argument removed"}}},
		{name: "null kept where the schema allows it", args: `{"path":"a","note":null}`, want: `{"note":null,"path":"a"}`},
		{name: "string null kept where a string is allowed", args: `{"path":"a","note":"null"}`, want: `{"note":"null","path":"a"}`},
		{name: "string array", args: `{"path":"a","tags":"[1, \"2\"]"}`, want: `{"path":"a","tags":[1,2]}`,
			coercions: []tools.Coercion{
				{Field: "/tags", From: `"[1, \"2\"]"`, To: `[1,"2"]`, Rule: "string to array"},
				{Field: "/tags/1", From: `"2"`, To: `2`, Rule: "string to integer"},
			}},
		{name: "nested object", args: `{"path":"a","opts":{"deep":"false"}}`, want: `{"opts":{"deep":false},"path":"a"}`,
			coercions: []tools.Coercion{{Field: "/opts/deep", From: `"false"`, To: `false`, Rule: "string to boolean"}}},
		{name: "string path never touched", args: `{"path":"42"}`, want: `{"path":"42"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := tools.DecodeArguments(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			tg, err := r.Resolve("read_file", args)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := tg.Prepare(args)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(tg.Repairs(), cs...)
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

func TestPrepareValidation(t *testing.T) {
	r := testRegistry(t)
	tests := []struct {
		name      string
		tool      string
		args      string
		wantField string
		wantRule  string
		wantMsg   string
	}{
		{name: "missing required", tool: "read_file", args: `{}`, wantField: "/path", wantRule: "required", wantMsg: `missing required argument "path" (path: File to read.)`},
		{name: "wrong type", tool: "read_file", args: `{"path":true}`, wantField: "/path", wantRule: "type", wantMsg: `argument "path" must be string, got boolean`},
		{name: "uncoercible integer", tool: "read_file", args: `{"path":"a","limit":"ten"}`, wantField: "/limit", wantRule: "type", wantMsg: "must be integer, got string"},
		{name: "fraction for integer", tool: "read_file", args: `{"path":"a","limit":2.5}`, wantField: "/limit", wantRule: "type"},
		{name: "below minimum", tool: "read_file", args: `{"path":"a","limit":0}`, wantField: "/limit", wantRule: "minimum", wantMsg: "minimum"},
		{name: "above maximum", tool: "read_file", args: `{"path":"a","limit":99999}`, wantField: "/limit", wantRule: "maximum"},
		{name: "unknown argument with hint", tool: "read_file", args: `{"path":"a","limt":3}`, wantField: "/limt", wantRule: "additionalProperties", wantMsg: `unknown argument "limt" (did you mean "limit"?)`},
		{name: "nested unknown", tool: "read_file", args: `{"path":"a","opts":{"x":1}}`, wantField: "/opts/x", wantRule: "additionalProperties"},
		{name: "array item type", tool: "read_file", args: `{"path":"a","tags":[1,"x"]}`, wantField: "/tags/1", wantRule: "type"},
		{name: "operation prefix in message", tool: "write_file", args: `{"path":"a"}`, wantField: "/content", wantRule: "required", wantMsg: `file_operations.write_file: missing required argument "content"`},
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
			_, err = tg.Prepare(args)
			var de *errdefs.Error
			if !errors.As(err, &de) || !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("err = %v, want INVALID_ARGUMENTS", err)
			}
			if de.Field != tt.wantField || de.Rule != tt.wantRule {
				t.Fatalf("field, rule = %q, %q; want %q, %q (msg %q)", de.Field, de.Rule, tt.wantField, tt.wantRule, de.Msg)
			}
			if !strings.Contains(de.Msg, tt.wantMsg) {
				t.Fatalf("msg = %q, want it to contain %q", de.Msg, tt.wantMsg)
			}
		})
	}
}

func TestRegistryOrderAndSchemas(t *testing.T) {
	r := testRegistry(t)
	var names []string
	for _, in := range r.List() {
		names = append(names, in.Spec.Name)
		var m map[string]any
		if err := json.Unmarshal(in.Schema, &m); err != nil {
			t.Fatalf("%s schema: %v", in.Spec.Name, err)
		}
	}
	want := []string{"think", "file_operations", "user_collaboration", "everything__echo"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("order = %v, want %v", names, want)
	}
	fo := r.List()[1]
	if fo.Risk != tools.RiskMedium {
		t.Fatalf("file_operations risk = %v, want medium (its highest operation)", fo.Risk)
	}
	var schema struct {
		Properties map[string]struct {
			Enum        []string `json:"enum"`
			Description string   `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(fo.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties["operation"].Enum; !reflect.DeepEqual(got, []string{"read_file", "list_dir", "write_file"}) {
		t.Fatalf("operation enum = %v", got)
	}
	if !strings.Contains(schema.Properties["content"].Description, "(write_file)") {
		t.Fatalf("content description should name its operation: %q", schema.Properties["content"].Description)
	}
	// Listings are byte-stable.
	a, _ := json.Marshal(r.List())
	b, _ := json.Marshal(r.List())
	if string(a) != string(b) {
		t.Fatal("listing is not stable")
	}
	if err := r.Register(&tools.Think{}); err == nil {
		t.Fatal("registering a duplicate name should fail")
	}
	if !r.Unregister("everything__echo") || r.Unregister("everything__echo") {
		t.Fatal("unregister should succeed once")
	}
	if _, err := r.Resolve("everything.echo", map[string]any{}); !errors.Is(err, errdefs.ErrToolNotFound) {
		t.Fatalf("after unregister: %v", err)
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"a longer line of text", 10, "a longer …"},
		{"multi\nline", 20, "multi line"},
		{"héllo wörld", 5, "héll…"},
	}
	for _, tt := range tests {
		if got := tools.Clip(tt.in, tt.n); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// Operations sharing a property name with different rules: the union keeps
// each operation's description and only the rules they share.
func TestConsolidatedSchemaMergesSharedProperties(t *testing.T) {
	r := tools.NewRegistry()
	err := r.Register(&fakeTool{spec: tools.Spec{Name: "fs", Operations: []tools.OperationSpec{
		{Name: "read", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1,"description":"File to read."}}}`)},
		{Name: "list", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","default":".","description":"Directory to list."}}}`)},
		{Name: "stat", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1,"description":"File to read."}}}`)},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	json.Unmarshal(r.List()[0].Schema, &s)
	p := s.Properties["path"]
	if p["type"] != "string" || p["minLength"] != nil || p["default"] != nil {
		t.Fatalf("path = %v: want the shared type only", p)
	}
	if d := p["description"].(string); d != "read, stat: File to read. list: Directory to list." {
		t.Fatalf("description = %q", d)
	}
	// Validation still uses each operation's own schema.
	args := map[string]any{"path": ""}
	tg, _ := r.Resolve("read", args)
	if _, err := tg.Prepare(args); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("read with empty path: %v", err)
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 4 << 20: "4 MiB",
		5<<20 + 1<<19: "5.5 MiB", 3 << 30: "3 GiB", -2048: "-2 KiB", 1 << 62: "4 EiB"} {
		if got := tools.HumanSize(n); got != want {
			t.Errorf("HumanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// A schema is compiled when its operation is first prepared; CheckSchemas
// compiles every operation's at once, as toold does for an MCP server's
// tools before offering them.
func TestSchemasCompileOnFirstUse(t *testing.T) {
	bad := &fakeTool{spec: tools.Spec{Name: "broken", Operations: []tools.OperationSpec{
		{Name: "broken", Risk: tools.RiskLow, Schema: json.RawMessage(`{"type":"object","properties":{"x":{"type":5}}}`)},
	}}}
	err := tools.CheckSchemas(bad)
	if err == nil || !strings.Contains(err.Error(), "schema of broken.broken") {
		t.Fatalf("CheckSchemas = %v, want the schema refused", err)
	}
	if err := tools.CheckSchemas(&fakeTool{spec: tools.Spec{Name: "nojson", Operations: []tools.OperationSpec{
		{Name: "nojson", Schema: json.RawMessage(`[1]`)},
	}}}); err == nil {
		t.Fatal("CheckSchemas accepted a schema that is not an object")
	}
	for _, tool := range []tools.Tool{&tools.Think{}, testRegistryTool()} {
		if err := tools.CheckSchemas(tool); err != nil {
			t.Fatalf("CheckSchemas(%s) = %v", tool.Spec().Name, err)
		}
	}
	// Registered without the check, the broken schema fails the call that
	// needs it (INTERNAL, not the caller's fault) and nothing else.
	r := testRegistry(t)
	if err := r.Register(bad); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the first compilation's result is kept
		tg, err := r.Resolve("broken", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tg.Prepare(map[string]any{"x": 1}); !errors.Is(err, errdefs.ErrInternal) || !strings.Contains(err.Error(), "does not compile") {
			t.Fatalf("Prepare = %v, want INTERNAL: the schema does not compile", err)
		}
	}
	// Many first calls at once compile once and all validate.
	errs := make(chan error, 8)
	for i := 0; i < cap(errs); i++ {
		go func() {
			args := map[string]any{"path": "a", "limit": "3"}
			tg, err := r.Resolve("read_file", args)
			if err == nil {
				_, err = tg.Prepare(args)
			}
			if _, still := args["limit"].(string); err == nil && still {
				err = errors.New("limit was not coerced to an integer")
			}
			errs <- err
		}()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// testRegistryTool is testRegistry's file_operations.
func testRegistryTool() tools.Tool {
	return &fakeTool{spec: tools.Spec{Name: "file_operations", Operations: []tools.OperationSpec{
		{Name: "read_file", Risk: tools.RiskLow, Schema: json.RawMessage(readSchema)},
	}}}
}
