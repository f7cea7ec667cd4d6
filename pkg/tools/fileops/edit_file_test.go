package fileops

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

const goFile = `package main

import "fmt"

func main() {
	fmt.Println("hello")
	for i := 0; i < 3; i++ {
		fmt.Println(i)
	}
}

func helper() int {
	return 42
}
`

func TestEditFile(t *testing.T) {
	tests := []struct {
		name      string
		content   string
		args      map[string]any
		want      string   // the file afterwards
		wantText  []string // in the result
		wantLines []int
	}{
		{
			name:      "single",
			content:   goFile,
			args:      map[string]any{"old_string": "\treturn 42", "new_string": "\treturn 43"},
			want:      strings.Replace(goFile, "return 42", "return 43", 1),
			wantText:  []string{"Edited f.go: replaced 1 occurrence at line 13 (1 line added, 1 line removed).", "--- a/f.go", "+++ b/f.go", "@@ -10,5 +10,5 @@", "-\treturn 42", "+\treturn 43"},
			wantLines: []int{13},
		},
		{
			name:     "multi-line",
			content:  goFile,
			args:     map[string]any{"old_string": "func helper() int {\n\treturn 42\n}", "new_string": "func helper() int {\n\tx := 42\n\treturn x\n}"},
			want:     strings.Replace(goFile, "\treturn 42\n", "\tx := 42\n\treturn x\n", 1),
			wantText: []string{"2 lines added, 1 line removed"},
		},
		{
			name:      "replace_all",
			content:   goFile,
			args:      map[string]any{"old_string": "fmt.Println", "new_string": "log.Println", "replace_all": true},
			want:      strings.ReplaceAll(goFile, "fmt.Println", "log.Println"),
			wantText:  []string{"replaced all 2 occurrences at lines 6 and 8"},
			wantLines: []int{6, 8},
		},
		{
			name:     "replace_all with one match",
			content:  goFile,
			args:     map[string]any{"old_string": "helper", "new_string": "assist", "replace_all": true},
			want:     strings.Replace(goFile, "helper", "assist", 1),
			wantText: []string{"replaced 1 occurrence at line 12"},
		},
		{
			name:    "delete text",
			content: "a\nb\nc\n",
			args:    map[string]any{"old_string": "b\n", "new_string": ""},
			want:    "a\nc\n",
		},
		{
			name:     "CRLF file, LF old_string and new_string",
			content:  "one\r\ntwo\r\nthree\r\n",
			args:     map[string]any{"old_string": "one\ntwo\n", "new_string": "one\nTWO\nextra\n"},
			want:     "one\r\nTWO\r\nextra\r\nthree\r\n",
			wantText: []string{"2 lines added, 1 line removed"},
		},
		{
			name:    "CRLF file, single-line old_string, multi-line new_string",
			content: "one\r\ntwo\r\n",
			args:    map[string]any{"old_string": "two", "new_string": "2\nzwei"},
			want:    "one\r\n2\r\nzwei\r\n",
		},
		{
			name:    "LF file, CRLF old_string",
			content: "one\ntwo\n",
			args:    map[string]any{"old_string": "one\r\ntwo", "new_string": "1\r\n2"},
			want:    "1\n2\n",
		},
		{
			name:    "keeps the final newline",
			content: "a\nlast\n",
			args:    map[string]any{"old_string": "last\n", "new_string": "final"},
			want:    "a\nfinal\n",
		},
		{
			name:    "keeps the final CRLF",
			content: "a\r\nlast\r\n",
			args:    map[string]any{"old_string": "last\r\n", "new_string": "final"},
			want:    "a\r\nfinal\r\n",
		},
		{
			name:    "no final newline stays without",
			content: "a\nlast",
			args:    map[string]any{"old_string": "last", "new_string": "final"},
			want:    "a\nfinal",
		},
		{
			name:    "whole file to empty",
			content: "only\n",
			args:    map[string]any{"old_string": "only\n", "new_string": ""},
			want:    "",
		},
		{
			name:     "empty old_string fills an empty file",
			content:  "",
			args:     map[string]any{"old_string": "", "new_string": "filled\n"},
			want:     "filled\n",
			wantText: []string{"Edited f.go"},
		},
		{
			name:    "unicode",
			content: "naïve café\n",
			args:    map[string]any{"old_string": "café", "new_string": "bistro ☕"},
			want:    "naïve bistro ☕\n",
		},
	}
	for _, op := range []string{"edit_file", "replace_string"} {
		for _, tt := range tests {
			t.Run(op+"/"+tt.name, func(t *testing.T) {
				f, dir := newTool(t, tools.Limits{}, map[string]string{"f.go": tt.content})
				tt.args["path"] = "f.go"
				res, err := run(t, f, op, jsonArgs(t, tt.args))
				if err != nil {
					t.Fatal(err)
				}
				if got := readFile(t, filepath.Join(dir, "f.go")); got != tt.want {
					t.Errorf("file = %q, want %q", got, tt.want)
				}
				for _, w := range tt.wantText {
					if !strings.Contains(res.Text, w) {
						t.Errorf("text does not contain %q:\n%s", w, res.Text)
					}
				}
				if tt.wantLines != nil && fmt.Sprint(res.Structured["lines"]) != fmt.Sprint(tt.wantLines) {
					t.Errorf("lines = %v, want %v", res.Structured["lines"], tt.wantLines)
				}
				noTemps(t, dir)
			})
		}
	}
}

func TestEditFileCreates(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, nil)
	res := mustRun(t, f, "edit_file", `{"path":"a/b.txt","old_string":"","new_string":"new\n"}`)
	if readFile(t, filepath.Join(dir, "a/b.txt")) != "new\n" || res.Structured["created"] != true {
		t.Fatalf("not created: %q %v", res.Text, res.Structured)
	}
	if !strings.Contains(res.Text, "Created a/b.txt (1 line, 4 B).") {
		t.Errorf("text = %q", res.Text)
	}
}

func TestEditFileErrors(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{
		"f.go":      goFile,
		"dup.txt":   strings.Repeat("same\n", 25),
		"bin":       "\x00\x01\x02binary",
		"dir/":      "",
		"spaces.py": "def f():\n    if x:\n        return 1\n",
		"tabs.go":   "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n",
	})
	tests := []struct {
		name  string
		args  map[string]any
		class error
		parts []string
	}{
		{"not found, closest lines", map[string]any{"path": "f.go", "old_string": "func helper() int {\n\treturn 41\n}"},
			errdefs.ErrFailed, []string{"old_string was not found in f.go", "most similar text is at lines 12-14", "    12\tfunc helper() int {", "    13\t\treturn 42", "    14\t}"}},
		{"not found, single line", map[string]any{"path": "f.go", "old_string": `fmt.Println("helo")`},
			errdefs.ErrFailed, []string{"line 6", `fmt.Println("hello")`}},
		{"not found, nothing similar", map[string]any{"path": "f.go", "old_string": "zzzzqqqq wwww"},
			errdefs.ErrFailed, []string{"No lines of the file are similar", "read_file"}},
		{"indentation: spaces for tabs", map[string]any{"path": "tabs.go", "old_string": "    if x {\n        return 1\n    }"},
			errdefs.ErrFailed, []string{"lines 2-4", "whitespace or indentation differs", "the file indents with tabs, old_string with spaces", "     3\t\t\treturn 1"}},
		{"indentation: tabs for spaces", map[string]any{"path": "spaces.py", "old_string": "\tif x:\n\t\treturn 1"},
			errdefs.ErrFailed, []string{"lines 2-3", "the file indents with spaces, old_string with tabs"}},
		{"line numbers copied", map[string]any{"path": "f.go", "old_string": "    13\t\treturn 42"},
			errdefs.ErrFailed, []string{"line-number prefixes", "line 13"}},
		{"escaped newline", map[string]any{"path": "f.go", "old_string": `func helper() int {\n`},
			errdefs.ErrFailed, []string{`the two characters \n`}},
		{"not unique", map[string]any{"path": "dup.txt", "old_string": "same"},
			errdefs.ErrFailed, []string{"occurs 25 times in dup.txt", "lines 1, 2, 3", "5 more", "replace_all"}},
		{"not unique, few", map[string]any{"path": "f.go", "old_string": "fmt.Println("},
			errdefs.ErrFailed, []string{"occurs 2 times", "lines 6 and 8"}},
		{"same strings", map[string]any{"path": "f.go", "old_string": "x", "new_string": "x"},
			errdefs.ErrInvalidArgument, []string{"are the same"}},
		{"empty old_string, file has content", map[string]any{"path": "f.go", "old_string": ""},
			errdefs.ErrInvalidArgument, []string{"old_string is empty, but f.go is not", "write_file"}},
		{"missing file", map[string]any{"path": "nope.go", "old_string": "x"},
			errdefs.ErrFailed, []string{"nope.go does not exist", "create_file"}},
		{"missing dir", map[string]any{"path": "nodir/nope.go", "old_string": "x"},
			errdefs.ErrFailed, []string{"does not exist"}},
		{"binary", map[string]any{"path": "bin", "old_string": "binary"},
			errdefs.ErrFailed, []string{"bin is a binary file", "text files only"}},
		{"directory", map[string]any{"path": "dir", "old_string": "x"},
			errdefs.ErrFailed, []string{"is a directory"}},
		{"old_string missing", map[string]any{"path": "f.go"},
			errdefs.ErrInvalidArgument, []string{"old_string is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := tt.args["new_string"]; !ok {
				tt.args["new_string"] = "NEW"
			}
			if tt.name == "old_string missing" {
				delete(tt.args, "old_string")
			}
			before := snapshot(t, dir)
			_, err := run(t, f, "edit_file", jsonArgs(t, tt.args))
			wantErr(t, err, tt.class, tt.parts...)
			sameSnapshot(t, dir, before)
		})
	}
}

func TestEditFileTooLarge(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, nil)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), bytes.Repeat([]byte("x"), maxEditBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, f, "edit_file", `{"path":"big.txt","old_string":"x","new_string":"y"}`)
	wantErr(t, err, errdefs.ErrFailed, "larger than 10 MiB", "write_file")
}

func TestPlanEdit(t *testing.T) {
	tests := []struct {
		before, old, new string
		all              bool
		want             string
		wantErr          string
	}{
		{"abc", "b", "B", false, "aBc", ""},
		{"aaaa", "aa", "b", true, "bb", ""},
		{"aaa", "aa", "b", true, "ba", ""},
		{"x\r\ny\nz\r\n", "y\nz", "Y\nZ", false, "x\r\nY\nZ\r\n", ""}, // mixed: the matched text's ending
		{"a\nb\n", "b\n", "c", false, "a\nc\n", ""},
		{"a\nb\n", "zzz", "c", false, "", "not found"},
		{"a a", "a", "b", false, "", "occurs 2 times"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.before+"|"+tt.old), func(t *testing.T) {
			p, err := planEdit("f", tt.before, tt.old, tt.new, tt.all)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.after != tt.want {
				t.Errorf("after = %q, want %q", p.after, tt.want)
			}
		})
	}
}

// TestEditFileSerialized runs many edits of one file at once: each must
// see the result of the ones before, so all of them apply.
func TestEditFileSerialized(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"log.txt": "END\n"})
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := run(t, f, "edit_file", jsonArgs(t, map[string]any{
				"path": "log.txt", "old_string": "END", "new_string": fmt.Sprintf("line %d\nEND", i),
			}))
			if err != nil {
				t.Errorf("edit %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	got := readFile(t, filepath.Join(dir, "log.txt"))
	for i := range n {
		if !strings.Contains(got, fmt.Sprintf("line %d\n", i)) {
			t.Errorf("edit %d was lost", i)
		}
	}
	if strings.Count(got, "\n") != n+1 || !strings.HasSuffix(got, "END\n") {
		t.Errorf("file = %q", got)
	}
	if k := f.locks.size(); k != 0 {
		t.Errorf("%d lock entries left", k)
	}
}

func TestEditFileDiffCapped(t *testing.T) {
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "x%d\n", i)
	}
	f, dir := newTool(t, tools.Limits{}, map[string]string{"many.txt": b.String()})
	res := mustRun(t, f, "edit_file", `{"path":"many.txt","old_string":"x","new_string":"y","replace_all":true}`)
	if got := readFile(t, filepath.Join(dir, "many.txt")); strings.Contains(got, "x") {
		t.Errorf("not all replaced")
	}
	if !strings.Contains(res.Text, "replaced all 200 occurrences") || !strings.Contains(res.Text, "the diff shows the first 50 of 200 replacements") {
		t.Errorf("text = %s", res.Text)
	}
	if res.Structured["diff_truncated"] != true {
		t.Errorf("diff_truncated = %v", res.Structured["diff_truncated"])
	}
}
