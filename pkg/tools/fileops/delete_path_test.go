package fileops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

func TestDeletePath(t *testing.T) {
	files := map[string]string{
		"file.txt":       "12345",
		"empty/":         "",
		"tree/a.txt":     "aaa",
		"tree/sub/b.txt": "bb",
		"tree/sub/c/":    "",
		"target.txt":     "keep",
		"link":           "->target.txt",
		"dirlink":        "->tree",
		"dangling":       "->nowhere",
	}
	tests := []struct {
		name     string
		args     string
		gone     []string
		kept     []string
		wantText string
		class    error // an error instead
		parts    []string
	}{
		{name: "file", args: `{"path":"file.txt"}`, gone: []string{"file.txt"}, wantText: "Deleted the file file.txt (5 B)."},
		{name: "empty dir", args: `{"path":"empty"}`, gone: []string{"empty"}, wantText: "Deleted the empty directory empty."},
		{name: "empty dir, trailing slash", args: `{"path":"empty/"}`, gone: []string{"empty"}},
		{name: "tree without recursive", args: `{"path":"tree"}`, class: errdefs.ErrFailed,
			parts: []string{"tree is a directory that is not empty (2 files, 2 directories, 5 B)", "recursive to true"}},
		{name: "tree", args: `{"path":"tree","recursive":true}`, gone: []string{"tree"}, kept: []string{"target.txt"},
			wantText: "Deleted the directory tree and everything in it (2 files, 2 directories, 5 B)."},
		{name: "symlink deletes the link", args: `{"path":"link"}`, gone: []string{"link"}, kept: []string{"target.txt"},
			wantText: "Deleted the symlink link; what it pointed to was not touched."},
		{name: "symlink to a dir, recursive", args: `{"path":"dirlink","recursive":true}`, gone: []string{"dirlink"}, kept: []string{"tree/a.txt", "tree/sub/b.txt"}},
		{name: "dangling symlink", args: `{"path":"dangling"}`, gone: []string{"dangling"}},
		{name: "missing", args: `{"path":"nope"}`, class: errdefs.ErrFailed, parts: []string{"nope does not exist; nothing was deleted"}},
		{name: "missing parent", args: `{"path":"no/pe"}`, class: errdefs.ErrFailed, parts: []string{"does not exist"}},
		{name: "root", args: `{"path":".","recursive":true}`, class: errdefs.ErrDenied, parts: []string{"workspace root", "never allowed"}},
		{name: "root by ABS", args: `{"path":"ABS","recursive":true}`, class: errdefs.ErrDenied, parts: []string{"workspace root"}},
		{name: "root by dots", args: `{"path":"tree/..","recursive":true}`, class: errdefs.ErrDenied, parts: []string{"workspace root"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, files)
			args := strings.Replace(tt.args, "ABS", f.ws.Dir(), 1)
			before := snapshot(t, dir)
			res, err := run(t, f, "delete_path", args)
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
			for _, g := range tt.gone {
				if _, err := os.Lstat(filepath.Join(dir, g)); !os.IsNotExist(err) {
					t.Errorf("%s still exists", g)
				}
			}
			for _, k := range tt.kept {
				if _, err := os.Lstat(filepath.Join(dir, k)); err != nil {
					t.Errorf("%s is gone", k)
				}
			}
		})
	}
}

// TestDeleteAncestorOfWorkspace refuses to delete a directory holding the
// workspace even where policy allowed the outside path.
func TestDeleteAncestorOfWorkspace(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"a": "x"})
	parent := filepath.Dir(f.ws.Dir())
	_, err := runOutside(t, f, "delete_path", jsonArgs(t, map[string]any{"path": parent, "recursive": true}), parent)
	wantErr(t, err, errdefs.ErrDenied, "contains it")
	_, err = runOutside(t, f, "delete_path", `{"path":"/","recursive":true}`, "/")
	wantErr(t, err, errdefs.ErrDenied)
	if _, err := os.Stat(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
}
