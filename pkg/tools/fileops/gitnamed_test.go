package fileops

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// gitNamedFunc is a func-field tools.GitNamed.
type gitNamedFunc func() []string

func (f gitNamedFunc) GitNamedPaths() []string { return f() }

// TestGitNamedRefusedByIdentity: the paths the terminal manager names
// (here .husky, a hooks directory, scripts/clean.sh, a filter's script,
// and not-yet-there gen/hook.sh) are refused by every route of the file
// tools by the object opened — through a symlinked directory, "..", a
// hard link, the directory holding one moved or deleted, the way to a
// missing one made in the same call — with the git directories' DENIED error and hint,
// and nothing changes (directories made on the way are taken back). Paths
// beside them stay writable, and without the port nothing is refused.
func TestGitNamedRefusedByIdentity(t *testing.T) {
	j := func(m map[string]any) string {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	files := map[string]string{".husky/pre-commit": "#!/bin/sh\n", "scripts/clean.sh": "cat\n", "scripts/other.sh": "x\n", "main.go": "package main\n"}
	named := func(dir string) tools.GitNamed {
		return gitNamedFunc(func() []string {
			return []string{filepath.Join(dir, ".husky"), filepath.Join(dir, "scripts/clean.sh"), filepath.Join(dir, "gen/deep/hook.sh")}
		})
	}
	for _, r := range []struct {
		name  string
		setup func(dir string)
		op    string
		args  string
	}{
		{name: "write a hook", op: "write_file", args: j(map[string]any{"path": ".husky/pre-commit", "content": "evil"})},
		{name: "new hook", op: "write_file", args: j(map[string]any{"path": ".husky/post-merge", "content": "evil"})},
		{name: "edit the script", op: "edit_file", args: j(map[string]any{"path": "scripts/clean.sh", "old_string": "cat", "new_string": "evil"})},
		{name: "through a symlinked directory", setup: func(d string) { os.Symlink(".husky", filepath.Join(d, "h")) }, op: "write_file", args: j(map[string]any{"path": "h/pre-commit", "content": "evil"})},
		{name: "dot-dot", op: "write_file", args: j(map[string]any{"path": "scripts/../scripts/clean.sh", "content": "evil"})},
		{name: "hard link", setup: func(d string) { os.Link(filepath.Join(d, "scripts/clean.sh"), filepath.Join(d, "alias.sh")) }, op: "edit_file", args: j(map[string]any{"path": "alias.sh", "old_string": "cat", "new_string": "evil"})},
		{name: "delete the script", op: "delete_path", args: j(map[string]any{"path": "scripts/clean.sh"})},
		{name: "delete the directory holding it", op: "delete_path", args: j(map[string]any{"path": "scripts", "recursive": true})},
		{name: "move the directory holding it", op: "move_path", args: j(map[string]any{"source": "scripts", "destination": "s2"})},
		{name: "move onto", op: "move_path", args: j(map[string]any{"source": "main.go", "destination": "scripts/clean.sh", "overwrite": true})},
		{name: "move the hooks directory", op: "move_path", args: j(map[string]any{"source": ".husky", "destination": "h2"})},
		{name: "patch", op: "apply_patch", args: j(map[string]any{"input": "*** Begin Patch\n*** Update File: scripts/clean.sh\n@@\n-cat\n+evil\n*** End Patch\n"})},
		{name: "not there yet", op: "write_file", args: j(map[string]any{"path": "gen/deep/hook.sh", "content": "evil"})},
		{name: "inside a hooks directory", op: "make_dir", args: j(map[string]any{"path": ".husky/_/x"})},
	} {
		t.Run(r.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, files)
			f.gitNamed = named(dir)
			if r.setup != nil {
				r.setup(dir)
			}
			before := snapshot(t, dir)
			_, err := run(t, f, r.op, r.args)
			wantErr(t, err, errdefs.ErrDenied, "git runs", "git_commit")
			if after := snapshot(t, dir); !maps.Equal(before, after) {
				t.Errorf("the workspace changed:\nbefore %v\nafter  %v", before, after)
			}
			if _, err := os.Lstat(filepath.Join(dir, "gen")); err == nil {
				t.Errorf("a directory made on the way to a refused path was left")
			}
		})
	}
	t.Run("beside them", func(t *testing.T) {
		f, dir := newTool(t, tools.Limits{}, files)
		f.gitNamed = named(dir)
		mustRun(t, f, "write_file", j(map[string]any{"path": "scripts/other.sh", "content": "y\n"}))
		mustRun(t, f, "make_dir", j(map[string]any{"path": "gen/other"}))
		mustRun(t, f, "make_dir", j(map[string]any{"path": "gen/deep"}))
		_, err := run(t, f, "write_file", j(map[string]any{"path": "gen/deep/hook.sh", "content": "evil"}))
		wantErr(t, err, errdefs.ErrDenied, "git runs", "git_commit")
		mustRun(t, f, "write_file", j(map[string]any{"path": "husky/pre-commit", "content": "y\n"}))
		mustRun(t, f, "move_path", j(map[string]any{"source": "scripts/other.sh", "destination": "other.sh"}))
	})
	t.Run("without the port", func(t *testing.T) {
		f, _ := newTool(t, tools.Limits{}, files)
		mustRun(t, f, "write_file", j(map[string]any{"path": ".husky/pre-commit", "content": "y\n"}))
		mustRun(t, f, "delete_path", j(map[string]any{"path": "scripts", "recursive": true}))
	})
}
