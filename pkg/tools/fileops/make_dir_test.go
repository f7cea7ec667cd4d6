package fileops

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

func TestMakeDir(t *testing.T) {
	tests := []struct {
		path     string
		wantText string
		created  bool
		class    error
		parts    []string
	}{
		{path: "new", wantText: "Created the directory new.", created: true},
		{path: "a/b/c", wantText: "Created the directory a/b/c. Created the missing parent directories a, a/b.", created: true},
		{path: "exists", wantText: "exists already exists as a directory; nothing was changed."},
		{path: "exists/", wantText: "exists already exists as a directory; nothing was changed."},
		{path: ".", wantText: ". already exists as a directory; nothing was changed."},
		{path: "dirlink", wantText: "exists already exists as a directory; nothing was changed."},
		{path: "file", class: errdefs.ErrFailed, parts: []string{"file exists and is a file, not a directory"}},
		{path: "file/sub", class: errdefs.ErrFailed, parts: []string{"not a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, map[string]string{"exists/": "", "file": "x", "dirlink": "->exists"})
			res, err := run(t, f, "make_dir", jsonArgs(t, map[string]any{"path": tt.path}))
			if tt.class != nil {
				wantErr(t, err, tt.class, tt.parts...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.wantText || res.Structured["created"] != tt.created {
				t.Errorf("result = %q %v, want %q", res.Text, res.Structured, tt.wantText)
			}
			if fi, err := os.Stat(filepath.Join(dir, tt.path)); err != nil || !fi.IsDir() {
				t.Errorf("%s is not a directory: %v", tt.path, err)
			}
		})
	}
}
