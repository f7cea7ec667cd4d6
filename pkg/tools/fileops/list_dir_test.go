package fileops

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

func TestListDir(t *testing.T) {
	f, _ := newTool(t, tools.Limits{ListItems: 6}, map[string]string{
		".gitignore":          "*.log\nbuild/\n",
		".git/HEAD":           "ref: refs/heads/main\n",
		".github/ci.yml":      "on: push\n",
		"README.md":           strings.Repeat("r", 2048),
		"go.mod":              "module x\n",
		"app.log":             "log\n",
		"build/out.bin":       "x",
		"cmd/tool/main.go":    "package main\n",
		"cmd/tool/.gitignore": "secret.txt\n",
		"cmd/tool/secret.txt": "s\n",
		"pkg/a.go":            "package pkg\n",
		"pkg/z/":              "",
		"link":                "->pkg/a.go",
		"empty/":              "",
		"many/":               "",
	})
	tests := []struct {
		name      string
		args      string
		want      string
		trunc     *tools.Truncation
		structure map[string]any
	}{
		{name: "root", args: `{}`,
			want: ".github/\ncmd/\nempty/\nmany/\npkg/\n.gitignore (13 B)\n" +
				"... 3 more entries not shown (9 in total). List a subdirectory or use a smaller depth to see them.\n" +
				"(2 entries matched by .gitignore not listed.)",
			trunc:     &tools.Truncation{ShownItems: 6, TotalItems: 9, Continuation: "list a subdirectory or use a smaller depth"},
			structure: map[string]any{"total_entries": 9, "ignored": int64(2), "path": "."}},
		{name: "subdirectory", args: `{"path":"pkg"}`, want: "z/\na.go (12 B)",
			structure: map[string]any{"total_entries": 2, "path": "pkg"}},
		{name: "tree", args: `{"path":"cmd","depth":3}`,
			want:      "tool/\n  .gitignore (11 B)\n  main.go (13 B)\n(1 entry matched by .gitignore not listed.)",
			structure: map[string]any{"total_entries": 3}},
		{name: "depth limits the tree", args: `{"path":"cmd","depth":1}`, want: "tool/"},
		{name: "empty", args: `{"path":"empty"}`, want: "(empty directory)"},
		{name: "dot slash", args: `{"path":"./pkg/"}`, want: "z/\na.go (12 B)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, f, "list_dir", tt.args)
			if res.Text != tt.want {
				t.Errorf("text:\n%s\nwant:\n%s", res.Text, tt.want)
			}
			switch {
			case tt.trunc == nil && res.Truncation != nil:
				t.Errorf("unexpected Truncation %+v", *res.Truncation)
			case tt.trunc != nil && (res.Truncation == nil || *res.Truncation != *tt.trunc):
				t.Errorf("Truncation = %+v, want %+v", res.Truncation, *tt.trunc)
			}
			for k, v := range tt.structure {
				if got := res.Structured[k]; fmt.Sprint(got) != fmt.Sprint(v) {
					t.Errorf("Structured[%q] = %v, want %v", k, got, v)
				}
			}
		})
	}
}

func TestListDirFull(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, map[string]string{
		"b.txt":       "bb",
		"a.txt":       "a",
		"B/":          "",
		"a/x/y/z.txt": "z",
		"link":        "->a.txt",
		"dangling":    "->nowhere",
		"up":          "->..",
	})
	res := mustRun(t, f, "list_dir", `{"depth":10}`)
	want := strings.Join([]string{
		"B/",
		"a/",
		"  x/",
		"    y/",
		"      z.txt (1 B)",
		"a.txt (1 B)",
		"b.txt (2 B)",
		"dangling@ -> nowhere",
		"link@ -> a.txt",
		"up@ -> ..",
	}, "\n")
	if res.Text != want {
		t.Errorf("text:\n%s\nwant:\n%s", res.Text, want)
	}
	entries := res.Structured["entries"].([]map[string]any)
	if len(entries) != 10 {
		t.Fatalf("entries = %d, want 10", len(entries))
	}
	if e := entries[4]; e["path"] != "a/x/y/z.txt" || e["type"] != "file" || e["size"] != int64(1) {
		t.Errorf("entry 4 = %v", e)
	}
	if e := entries[9]; e["type"] != "symlink" || e["target"] != ".." {
		t.Errorf("entry 9 = %v", e)
	}
}

func TestListDirErrors(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, map[string]string{"file.txt": "x", "d/": ""})
	tests := []struct {
		name, args string
		class      error
		parts      []string
	}{
		{"missing", `{"path":"nope"}`, errdefs.ErrFailed, []string{`"nope" does not exist`}},
		{"file", `{"path":"file.txt"}`, errdefs.ErrFailed, []string{"is a file, not a directory", "read_file"}},
		{"depth too big", `{"depth":11}`, errdefs.ErrInvalidArgument, []string{"depth must be from 1 to 10"}},
		{"depth negative", `{"depth":-1}`, errdefs.ErrInvalidArgument, []string{"depth"}},
		{"outside", `{"path":"../"}`, errdefs.ErrDenied, []string{"outside the workspace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, f, "list_dir", tt.args)
			wantErr(t, err, tt.class, tt.parts...)
		})
	}
}
