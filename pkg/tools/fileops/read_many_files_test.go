package fileops

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/tools"
)

func TestReadManyFiles(t *testing.T) {
	files := map[string]string{
		"a.go":        "package a\n",
		"b.go":        "package b\n",
		"sub/c.go":    "package c\n",
		"sub/d.txt":   "d\n",
		"bin.dat":     "\x00\x01",
		".hidden.go":  "package hidden\n",
		"ignored.go":  "package ignored\n",
		".gitignore":  "ignored.go\n",
		"big/big.txt": strings.Repeat("0123456789\n", 200),
	}
	tests := []struct {
		name   string
		args   string
		limits tools.Limits
		want   []string
		not    []string
		trunc  bool
	}{
		{name: "paths", args: `{"paths":["a.go","sub/d.txt"]}`,
			want: []string{"==> a.go <==\n     1\tpackage a\n\n==> sub/d.txt <==\n     1\td"}},
		{name: "pattern", args: `{"paths":["**/*.go"]}`,
			want: []string{"==> a.go <==", "==> b.go <==", "==> sub/c.go <=="}, not: []string{"hidden", "ignored"}},
		{name: "duplicates once", args: `{"paths":["a.go","*.go","./a.go"]}`, want: []string{"==> b.go <=="}},
		{name: "errors inline", args: `{"paths":["nope.txt","../x","a.go"]}`,
			want: []string{"==> nope.txt <==\n[error: \"nope.txt\" does not exist", "==> ../x <==\n[error: path \"../x\" is outside the workspace", "package a"}},
		{name: "no match", args: `{"paths":["*.rs"]}`, want: []string{`[No files match "*.rs".]`}},
		{name: "binary", args: `{"paths":["bin.dat"]}`, want: []string{"bin.dat is a binary file"}},
		{name: "budget", args: `{"paths":["big/big.txt","a.go"]}`, limits: tools.Limits{ReadBytes: 1024},
			want: []string{"==> big/big.txt <==", "[Output truncated at 1 KiB", "call read_file with offset=", "not read: a.go"}, trunc: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := newTool(t, tt.limits, files)
			res := mustRun(t, f, "read_many_files", tt.args)
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result does not contain %q:\n%s", w, res.Text)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(res.Text, n) {
					t.Errorf("result contains %q:\n%s", n, res.Text)
				}
			}
			if (res.Truncation != nil) != tt.trunc {
				t.Errorf("truncation = %+v", res.Truncation)
			}
		})
	}
	t.Run("describe", func(t *testing.T) {
		f, _ := newTool(t, tools.Limits{}, nil)
		a, _ := tools.DecodeArguments(`{"paths":["a.go","src/**/*.go","*.md"]}`)
		e := f.Describe(&tools.Call{Tool: ToolName, Operation: "read_many_files", Args: a})
		if fmt.Sprint(e.Reads) != "[a.go src .]" || !strings.HasPrefix(e.Display, "Reading files: a.go, src/**/*.go") {
			t.Errorf("effect = %+v", e)
		}
	})
}
