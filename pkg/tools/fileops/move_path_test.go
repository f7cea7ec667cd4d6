package fileops

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

func TestMovePath(t *testing.T) {
	files := map[string]string{
		"a.txt":       "A",
		"b.txt":       "B",
		"docs/":       "",
		"full/x":      "x",
		"tree/t.txt":  "T",
		"tree/s/u":    "U",
		"target.txt":  "keep",
		"link":        "->target.txt",
		"emptydir/":   "",
		"nested/dir/": "",
	}
	tests := []struct {
		name      string
		args      string
		wantText  string
		wantFiles map[string]string // path -> content afterwards ("->x" for a symlink)
		gone      []string
		class     error
		parts     []string
	}{
		{name: "rename", args: `{"source":"a.txt","destination":"c.txt"}`, wantText: "Moved the file a.txt to c.txt.",
			wantFiles: map[string]string{"c.txt": "A"}, gone: []string{"a.txt"}},
		{name: "into a directory with /", args: `{"source":"a.txt","destination":"docs/"}`,
			wantFiles: map[string]string{"docs/a.txt": "A"}, gone: []string{"a.txt"}},
		{name: "parents created", args: `{"source":"a.txt","destination":"new/deep/a.txt"}`,
			wantText:  "Moved the file a.txt to new/deep/a.txt. Created the missing parent directories new, new/deep.",
			wantFiles: map[string]string{"new/deep/a.txt": "A"}},
		{name: "directory", args: `{"source":"tree","destination":"moved"}`,
			wantFiles: map[string]string{"moved/t.txt": "T", "moved/s/u": "U"}, gone: []string{"tree"}},
		{name: "symlink moves as a link", args: `{"source":"link","destination":"docs/link"}`,
			wantFiles: map[string]string{"docs/link": "->target.txt", "target.txt": "keep"}, gone: []string{"link"}},
		{name: "overwrite a file", args: `{"source":"a.txt","destination":"b.txt","overwrite":true}`,
			wantText:  "Moved the file a.txt to b.txt, replacing the file that was there.",
			wantFiles: map[string]string{"b.txt": "A"}, gone: []string{"a.txt"}},
		{name: "overwrite an empty dir", args: `{"source":"tree","destination":"emptydir","overwrite":true}`,
			wantFiles: map[string]string{"emptydir/t.txt": "T"}, gone: []string{"tree"}},
		{name: "existing file", args: `{"source":"a.txt","destination":"b.txt"}`, class: errdefs.ErrFailed,
			parts: []string{"destination b.txt exists (a file); nothing was moved", "overwrite"}},
		{name: "existing dir", args: `{"source":"a.txt","destination":"docs"}`, class: errdefs.ErrFailed,
			parts: []string{"docs is an existing directory", "docs/a.txt"}},
		{name: "file over dir", args: `{"source":"a.txt","destination":"docs","overwrite":true}`, class: errdefs.ErrFailed,
			parts: []string{"can only be replaced by a directory"}},
		{name: "dir over file", args: `{"source":"tree","destination":"a.txt","overwrite":true}`, class: errdefs.ErrFailed,
			parts: []string{"delete the destination first"}},
		{name: "dir over non-empty dir", args: `{"source":"tree","destination":"full","overwrite":true}`, class: errdefs.ErrFailed,
			parts: []string{"not empty"}},
		{name: "into itself", args: `{"source":"tree","destination":"tree/s/tree"}`, class: errdefs.ErrInvalidArgument,
			parts: []string{"into itself"}},
		{name: "same", args: `{"source":"a.txt","destination":"./a.txt"}`, class: errdefs.ErrInvalidArgument,
			parts: []string{"the same path"}},
		{name: "missing source", args: `{"source":"nope","destination":"x/y"}`, class: errdefs.ErrFailed,
			parts: []string{"source nope does not exist"}},
		{name: "root", args: `{"source":".","destination":"x"}`, class: errdefs.ErrDenied, parts: []string{"workspace root"}},
		{name: "onto root", args: `{"source":"a.txt","destination":".","overwrite":true}`, class: errdefs.ErrDenied, parts: []string{"workspace root"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, files)
			before := snapshot(t, dir)
			res, err := run(t, f, "move_path", tt.args)
			if tt.class != nil {
				wantErr(t, err, tt.class, tt.parts...)
				sameSnapshot(t, dir, before)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantText != "" && res.Text != tt.wantText {
				t.Errorf("text = %q, want %q", res.Text, tt.wantText)
			}
			for p, want := range tt.wantFiles {
				full := filepath.Join(dir, p)
				var got string
				if target, err := os.Readlink(full); err == nil {
					got = "->" + target
				} else {
					got = readFile(t, full)
				}
				if got != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
			for _, g := range tt.gone {
				if _, err := os.Lstat(filepath.Join(dir, g)); !os.IsNotExist(err) {
					t.Errorf("%s still exists", g)
				}
			}
		})
	}
}
