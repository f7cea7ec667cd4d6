package fileops

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

func TestGlob(t *testing.T) {
	f, _ := newTool(t, tools.Limits{ListItems: 4}, map[string]string{
		".gitignore":               "vendor/\n*.gen.go\n",
		"main.go":                  "",
		"main_test.go":             "",
		"README.md":                "",
		"a.gen.go":                 "",
		"cmd/tool/main.go":         "",
		"cmd/tool/main_test.go":    "",
		"pkg/x/x.go":               "",
		"pkg/x/x_test.go":          "",
		"pkg/x/.gitignore":         "local_test.go\n",
		"pkg/x/local_test.go":      "",
		"pkg/x/testdata/":          "",
		"vendor/dep/dep.go":        "",
		".github/workflows/ci.yml": "",
		".hidden.go":               "",
		"web/app.ts":               "",
		"web/app.tsx":              "",
		"web/app.js":               "",
		"linkdir":                  "->pkg",
		"linkfile.go":              "->main.go",
	})
	tests := []struct {
		name      string
		args      string
		want      string
		trunc     *tools.Truncation
		structure map[string]any
	}{
		{name: "any depth", args: `{"pattern":"**/*_test.go"}`, want: "cmd/tool/main_test.go\nmain_test.go\npkg/x/x_test.go",
			structure: map[string]any{"total": 3}},
		{name: "top level only", args: `{"pattern":"*.go"}`, want: "linkfile.go\nmain.go\nmain_test.go"},
		{name: "capped", args: `{"pattern":"**/*.go"}`,
			want:      "cmd/tool/main.go\ncmd/tool/main_test.go\nlinkfile.go\nmain.go\n\n[Showing the first 4 of 7 matches, sorted by path. Use a more specific pattern or path to see the rest.]",
			trunc:     &tools.Truncation{ShownItems: 4, TotalItems: 7, Continuation: "use a more specific pattern or path"},
			structure: map[string]any{"total": 7}},
		{name: "path", args: `{"pattern":"*_test.go","path":"pkg/x"}`, want: "pkg/x/x_test.go"},
		{name: "base in pattern", args: `{"pattern":"pkg/**/*.go"}`, want: "pkg/x/x.go\npkg/x/x_test.go"},
		{name: "braces", args: `{"pattern":"web/*.{ts,tsx}"}`, want: "web/app.ts\nweb/app.tsx"},
		{name: "directories", args: `{"pattern":"**/testdata"}`, want: "pkg/x/testdata/"},
		{name: "middle star", args: `{"pattern":"cmd/*/main.go"}`, want: "cmd/tool/main.go"},
		{name: "hidden named", args: `{"pattern":".github/**/*.yml"}`, want: ".github/workflows/ci.yml"},
		{name: "hidden file named", args: `{"pattern":"**/.hidden*"}`, want: ".hidden.go"},
		{name: "plain path", args: `{"pattern":"cmd/tool/main.go"}`, want: "cmd/tool/main.go"},
		{name: "absolute path inside", args: `{"pattern":"%DIR%/pkg/x/*.go"}`, want: "pkg/x/x.go\npkg/x/x_test.go"},
		{name: "no match", args: `{"pattern":"**/*.rs"}`,
			want: `No files match "**/*.rs" in .. (.git, hidden entries and entries matched by .gitignore are skipped.)`, structure: map[string]any{"total": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := strings.ReplaceAll(tt.args, "%DIR%", f.ws.Dir())
			res := mustRun(t, f, "glob", args)
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

// TestGlobManyMatches checks the bounded collection keeps the first matches
// by path whatever order the walk finds them in.
func TestGlobManyMatches(t *testing.T) {
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("d%02d/f%03d.txt", i%17, i)] = ""
	}
	f, _ := newTool(t, tools.Limits{ListItems: 5}, files)
	res := mustRun(t, f, "glob", `{"pattern":"**/*.txt"}`)
	want := "d00/f000.txt\nd00/f017.txt\nd00/f034.txt\nd00/f051.txt\nd00/f068.txt\n\n[Showing the first 5 of 300 matches, sorted by path. Use a more specific pattern or path to see the rest.]"
	if res.Text != want {
		t.Errorf("text:\n%s\nwant:\n%s", res.Text, want)
	}
}

func TestGlobErrors(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, map[string]string{"file.txt": "", "d/": ""})
	tests := []struct {
		name, args string
		class      error
		parts      []string
	}{
		{"bad pattern", `{"pattern":"[abc"}`, errdefs.ErrInvalidArgument, []string{"not a valid glob"}},
		{"bad braces", `{"pattern":"{a,b"}`, errdefs.ErrInvalidArgument, []string{"not a valid glob"}},
		{"no pattern", `{}`, errdefs.ErrInvalidArgument, []string{"pattern is required"}},
		{"directory only", `{"pattern":"d/"}`, errdefs.ErrInvalidArgument, []string{"names a directory"}},
		{"missing path", `{"pattern":"*","path":"nope"}`, errdefs.ErrFailed, []string{"does not exist"}},
		{"file as path", `{"pattern":"*","path":"file.txt"}`, errdefs.ErrFailed, []string{"is a file, not a directory"}},
		{"outside", `{"pattern":"/etc/*"}`, errdefs.ErrDenied, []string{"outside the workspace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, f, "glob", tt.args)
			wantErr(t, err, tt.class, tt.parts...)
		})
	}
}
