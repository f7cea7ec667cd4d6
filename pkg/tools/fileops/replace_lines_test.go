package fileops

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

func TestReplaceLines(t *testing.T) {
	const five = "one\ntwo\nthree\nfour\nfive\n"
	tests := []struct {
		name, content, args, want string
		text                      []string
	}{
		{"one line", five, `{"start_line":2,"end_line":2,"new_text":"TWO"}`, "one\nTWO\nthree\nfour\nfive\n",
			[]string{"Edited f.txt: replaced line 2 (1 line added, 1 line removed).", "-two", "+TWO"}},
		{"range to more lines", five, `{"start_line":2,"end_line":4,"new_text":"a\nb\n"}`, "one\na\nb\nfive\n",
			[]string{"replaced lines 2-4 (2 lines added, 3 lines removed)"}},
		{"delete", five, `{"start_line":1,"end_line":2,"new_text":""}`, "three\nfour\nfive\n", nil},
		{"insert before", five, `{"start_line":3,"end_line":2,"new_text":"2.5"}`, "one\ntwo\n2.5\nthree\nfour\nfive\n", nil},
		{"append", five, `{"start_line":6,"end_line":5,"new_text":"six"}`, five + "six\n", nil},
		{"end past the file", five, `{"start_line":5,"end_line":9,"new_text":"last"}`, "one\ntwo\nthree\nfour\nlast\n", nil},
		{"CRLF kept", "a\r\nb\r\n", `{"start_line":2,"end_line":2,"new_text":"B"}`, "a\r\nB\r\n", nil},
		{"no final newline", "a\nb", `{"start_line":3,"end_line":2,"new_text":"c"}`, "a\nb\nc\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, map[string]string{"f.txt": tt.content})
			res, err := run(t, f, "replace_lines", `{"path":"f.txt",`+tt.args[1:])
			if err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(dir, "f.txt")); got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
			for _, w := range tt.text {
				if !strings.Contains(res.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, res.Text)
				}
			}
			noTemps(t, dir)
		})
	}
}

// Bad ranges and files are refused with the fix and change nothing.
func TestReplaceLinesErrors(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"f.txt": "a\nb\n", "bin": "\x00\x01binary"})
	cases := []struct {
		args  string
		class error
		msg   string
	}{
		{`{"path":"f.txt","start_line":5,"end_line":5,"new_text":"x"}`, errdefs.ErrInvalidArgument, "start_line 5 is past the end of f.txt, which has 2 lines"},
		{`{"path":"f.txt","start_line":2,"end_line":0,"new_text":"x"}`, errdefs.ErrInvalidArgument, "end_line 0 is before start_line 2"},
		{`{"path":"f.txt","start_line":1,"end_line":1,"new_text":"a"}`, errdefs.ErrInvalidArgument, "would change nothing"},
		{`{"path":"nope.txt","start_line":1,"end_line":1,"new_text":"x"}`, errdefs.ErrFailed, "nope.txt does not exist"},
		{`{"path":"bin","start_line":1,"end_line":1,"new_text":"x"}`, errdefs.ErrFailed, "binary file"},
	}
	for _, c := range cases {
		_, err := run(t, f, "replace_lines", c.args)
		if !errors.Is(err, c.class) || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v containing %q", c.args, err, c.class, c.msg)
		}
	}
	if got := readFile(t, filepath.Join(dir, "f.txt")); got != "a\nb\n" {
		t.Errorf("f.txt changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.txt")); err == nil {
		t.Error("nope.txt created")
	}
}
