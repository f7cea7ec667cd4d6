package fileops

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// newTool creates a workspace in a temporary directory holding files (path
// -> content; a path ending in "/" is an empty directory; content starting
// with "->" makes a symlink to the rest) and returns the tool on it.
func newTool(t *testing.T, limits tools.Limits, files map[string]string) (*FileOperations, string) {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return New(ws, limits, Options{}), dir
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// run calls op with args (JSON) as the registry would: numbers as
// json.Number.
func run(t *testing.T, f *FileOperations, op, args string) (*tools.Result, error) {
	t.Helper()
	return runCtx(context.Background(), t, f, op, args, nil)
}

func runCtx(ctx context.Context, t *testing.T, f *FileOperations, op, args string, sink *tools.Sink) (*tools.Result, error) {
	t.Helper()
	a, err := tools.DecodeArguments(args)
	if err != nil {
		t.Fatalf("bad test arguments %s: %v", args, err)
	}
	return f.Run(ctx, &tools.Call{ID: "c1", Tool: ToolName, Operation: op, Args: a}, sink)
}

// mustRun is run that fails the test on an error.
func mustRun(t *testing.T, f *FileOperations, op, args string) *tools.Result {
	t.Helper()
	res, err := run(t, f, op, args)
	if err != nil {
		t.Fatalf("%s %s: %v", op, args, err)
	}
	return res
}

// wantErr checks that err is of class and its message contains every one of
// parts.
func wantErr(t *testing.T, err error, class error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", class)
	}
	if !errors.Is(err, class) {
		t.Fatalf("error %q (%T) is not %v", err, err, class)
	}
	var e *errdefs.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %q is not an *errdefs.Error", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

// fakeSink records a call's progress; nil functions do nothing (see sink).
type fakeSink struct {
	mu         sync.Mutex
	progress   []string
	ProgressFn func(msg string, fraction float64) error
	OutputFn   func(stream tools.Stream, p []byte) error
}

func (s *fakeSink) Progress(msg string, fraction float64) error {
	s.mu.Lock()
	s.progress = append(s.progress, msg)
	s.mu.Unlock()
	if s.ProgressFn != nil {
		return s.ProgressFn(msg, fraction)
	}
	return nil
}

func (s *fakeSink) Output(stream tools.Stream, p []byte) error {
	if s.OutputFn != nil {
		return s.OutputFn(stream, p)
	}
	return nil
}

func (s *fakeSink) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.progress...)
}

// sink is the *tools.Sink a tool gets, made of s.
func (s *fakeSink) sink() *tools.Sink {
	return &tools.Sink{
		ProgressFunc: func(msg string, fraction float64, _ map[string]any) error { return s.Progress(msg, fraction) },
		OutputFunc:   s.Output,
	}
}

func TestSpec(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, nil)
	spec := f.Spec()
	if spec.Name != "file_operations" || spec.Source != "builtin" || spec.Description == "" {
		t.Fatalf("spec = %+v", spec)
	}
	if !spec.Consolidated() {
		t.Error("file_operations should be a consolidated tool")
	}
	wantOps := []string{"read_file", "list_dir", "glob", "grep_search", "read_many_files",
		"write_file", "create_file", "edit_file", "replace_string", "replace_lines", "delete_path", "move_path", "make_dir", "apply_patch", "str_replace_based_edit_tool"}
	wantRisk := map[string]tools.Risk{
		"write_file": tools.RiskMedium, "create_file": tools.RiskMedium, "edit_file": tools.RiskMedium,
		"replace_string": tools.RiskMedium, "replace_lines": tools.RiskMedium, "make_dir": tools.RiskMedium, "apply_patch": tools.RiskMedium,
		"str_replace_based_edit_tool": tools.RiskMedium,
		"delete_path":                 tools.RiskHigh, "move_path": tools.RiskHigh,
	}
	if len(spec.Operations) != len(wantOps) {
		t.Fatalf("operations = %d, want %d", len(spec.Operations), len(wantOps))
	}
	for i, op := range spec.Operations {
		t.Run(op.Name, func(t *testing.T) {
			if op.Name != wantOps[i] {
				t.Errorf("operation %d = %q, want %q", i, op.Name, wantOps[i])
			}
			want, ok := wantRisk[op.Name]
			if !ok {
				want = tools.RiskLow
			}
			if op.Risk != want {
				t.Errorf("risk = %v, want %v", op.Risk, want)
			}
			if op.Description == "" {
				t.Error("no description")
			}
			var schema struct {
				Type                 string                    `json:"type"`
				Properties           map[string]map[string]any `json:"properties"`
				Required             []string                  `json:"required"`
				AdditionalProperties *bool                     `json:"additionalProperties"`
			}
			if err := json.Unmarshal(op.Schema, &schema); err != nil {
				t.Fatalf("schema is not JSON: %v\n%s", err, op.Schema)
			}
			if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
				t.Errorf("schema must be a closed object: %s", op.Schema)
			}
			for name, p := range schema.Properties {
				if d, _ := p["description"].(string); d == "" {
					t.Errorf("property %q has no description", name)
				}
				if _, ok := p["type"]; !ok {
					t.Errorf("property %q has no type", name)
				}
			}
			for _, r := range schema.Required {
				if _, ok := schema.Properties[r]; !ok {
					t.Errorf("required %q is not a property", r)
				}
			}
		})
	}
}

// TestSpecRegisters checks the schemas against the registry's compiler.
func TestSpecRegisters(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, nil)
	r := tools.NewRegistry()
	if err := r.Register(f); err != nil {
		t.Fatalf("Register: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, nil)
	long := strings.Repeat("x", 100)
	tests := []struct {
		op, args    string
		wantDisplay string
		wantReads   []string
	}{
		{"read_file", `{"path":"main.go"}`, "Reading file: main.go", []string{"main.go"}},
		{"list_dir", `{"path":"src"}`, "Listing directory: src", []string{"src"}},
		{"list_dir", `{}`, "Listing directory: .", []string{"."}},
		{"glob", `{"pattern":"**/*.go"}`, "Finding files: **/*.go", []string{"."}},
		{"glob", `{"pattern":"*.md","path":"docs"}`, "Finding files: *.md", []string{"docs"}},
		{"grep_search", `{"pattern":"func main","path":"cmd"}`, "Searching code: func main", []string{"cmd"}},
		{"grep_search", `{"pattern":"` + long + `"}`, "Searching code: " + strings.Repeat("x", 59) + "…", []string{"."}},
	}
	for _, tt := range tests {
		t.Run(tt.op+tt.args, func(t *testing.T) {
			a, err := tools.DecodeArguments(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			e := f.Describe(&tools.Call{Tool: ToolName, Operation: tt.op, Args: a})
			if e.Display != tt.wantDisplay {
				t.Errorf("Display = %q, want %q", e.Display, tt.wantDisplay)
			}
			if strings.Join(e.Reads, ",") != strings.Join(tt.wantReads, ",") {
				t.Errorf("Reads = %q, want %q", e.Reads, tt.wantReads)
			}
			if len(e.Writes) != 0 || e.Command != "" {
				t.Errorf("a read operation has writes or a command: %+v", e)
			}
		})
	}
}

func TestUnknownOperation(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, nil)
	_, err := run(t, f, "chmod_path", `{"path":"x"}`)
	wantErr(t, err, errdefs.ErrToolNotFound, "chmod_path", "write_file", "make_dir")
	_, err = f.Preview(context.Background(), &tools.Call{Tool: ToolName, Operation: "chmod_path"})
	wantErr(t, err, errdefs.ErrToolNotFound, "chmod_path")
}

func TestCanceledBeforeStart(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, map[string]string{"a.txt": "hello\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, op := range []string{"read_file", "list_dir", "glob", "grep_search"} {
		t.Run(op, func(t *testing.T) {
			_, err := runCtx(ctx, t, f, op, `{"path":"a.txt","pattern":"x"}`, nil)
			wantErr(t, err, errdefs.ErrCanceled)
		})
	}
}

// TestEscapesRefused checks that no operation reads outside the workspace,
// whatever the path looks like.
func TestEscapesRefused(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "root:secret\n"})
	f, _ := newTool(t, tools.Limits{}, map[string]string{
		"sub/a.txt":     "inside\n",
		"etc":           "->/etc",
		"up":            "->..",
		"out":           "->" + outside,
		"sub/secretlnk": "->" + filepath.Join(outside, "secret.txt"),
	})
	paths := []string{"../x", "/etc/passwd", "etc/passwd", "etc", "up", "up/x", "sub/../../x", "out/secret.txt", "sub/secretlnk", outside}
	for _, p := range paths {
		for _, tc := range []struct{ op, args string }{
			{"read_file", `{"path":%q}`},
			{"list_dir", `{"path":%q}`},
			{"glob", `{"pattern":"*","path":%q}`},
			{"grep_search", `{"pattern":"root","path":%q}`},
		} {
			t.Run(tc.op+"/"+p, func(t *testing.T) {
				q, _ := json.Marshal(p)
				args := strings.Replace(tc.args, "%q", string(q), 1)
				res, err := run(t, f, tc.op, args)
				if err == nil {
					t.Fatalf("got a result, want ErrDenied: %q", res.Text)
				}
				if !errors.Is(err, errdefs.ErrDenied) {
					// A symlink to a file is "not a directory" for list_dir
					// and glob only after it resolved inside; anything
					// else must be a denial.
					t.Fatalf("error %q is not ErrDenied", err)
				}
			})
		}
	}
	t.Run("glob pattern base", func(t *testing.T) {
		_, err := run(t, f, "glob", `{"pattern":"../*"}`)
		wantErr(t, err, errdefs.ErrDenied, "outside the workspace")
	})
	t.Run("walks do not follow symlinks out", func(t *testing.T) {
		res := mustRun(t, f, "grep_search", `{"pattern":"root:|inside"}`)
		if strings.Contains(res.Text, "root:") || !strings.Contains(res.Text, "sub/a.txt:1:inside") {
			t.Errorf("grep followed a symlink or missed a file:\n%s", res.Text)
		}
		res = mustRun(t, f, "glob", `{"pattern":"**/*.txt"}`)
		if res.Text != "sub/a.txt" {
			t.Errorf("glob = %q, want only sub/a.txt", res.Text)
		}
	})
}

func TestIntArg(t *testing.T) {
	tests := []struct {
		in      string
		want    intArg
		wantErr bool
	}{
		{"10", 10, false},
		{"10.0", 10, false},
		{"-3", -3, false},
		{`"7"`, 7, false},
		{"1e12", intArg(1<<31 - 1), false},
		{"null", 5, false},
		{"1.5", 0, true},
		{`"x"`, 0, true},
		{"true", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			n := intArg(5)
			err := json.Unmarshal([]byte(tt.in), &n)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && n != tt.want {
				t.Errorf("got %d, want %d", n, tt.want)
			}
		})
	}
}
