package fileops

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

func previewCall(t *testing.T, f *FileOperations, op, args string, outside ...string) (string, error) {
	t.Helper()
	a, err := tools.DecodeArguments(args)
	if err != nil {
		t.Fatal(err)
	}
	return f.Preview(context.Background(), &tools.Call{ID: "p", Tool: ToolName, Operation: op, Args: a, Outside: outside})
}

func TestPreview(t *testing.T) {
	outside := outsideDir(t)
	files := map[string]string{
		"a.txt":      "one\ntwo\nthree\n",
		"tree/x.go":  "package x\n",
		"tree/y/z":   "zz",
		"empty/":     "",
		"bin":        "\x00\x01",
		"link":       "->a.txt",
		"sub/b.txt":  "b",
		"out":        "->" + outside,
		"crlf.txt":   "a\r\nb\r\n",
		"docs/":      "",
		"dupes.txt":  "x x x\n",
		"nested/a/b": "",
	}
	tests := []struct {
		name    string
		op      string
		args    string
		outside []string
		want    []string // parts of the preview
		not     []string // never in it
		class   error    // an error instead
	}{
		{name: "write replaces", op: "write_file", args: `{"path":"a.txt","content":"one\n2\nthree\n"}`,
			want: []string{"--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"}},
		{name: "write new", op: "write_file", args: `{"path":"new/n.txt","content":"hello\n"}`,
			want: []string{"--- /dev/null\n+++ b/new/n.txt\n@@ -0,0 +1 @@\n+hello\n"}},
		{name: "write unchanged", op: "write_file", args: `{"path":"a.txt","content":"one\ntwo\nthree\n"}`, want: []string{"No change"}},
		{name: "write empty new", op: "write_file", args: `{"path":"e","content":""}`, want: []string{"Would create the empty file e."}},
		{name: "write binary", op: "write_file", args: `{"path":"bin","content":"text"}`, want: []string{"Would replace the binary file bin"}},
		{name: "write through link", op: "write_file", args: `{"path":"link","content":"x\n"}`, want: []string{"--- a/a.txt"}},
		{name: "create", op: "create_file", args: `{"path":"c.txt","content":"c\n"}`, want: []string{"--- /dev/null", "+c"}},
		{name: "create existing", op: "create_file", args: `{"path":"a.txt","content":"c\n"}`, class: errdefs.ErrFailed},
		{name: "edit", op: "edit_file", args: `{"path":"a.txt","old_string":"two","new_string":"TWO"}`,
			want: []string{"@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"}},
		{name: "edit CRLF", op: "replace_string", args: `{"path":"crlf.txt","old_string":"a\nb","new_string":"a\nB"}`, want: []string{"-b\r\n+B\r\n"}},
		{name: "edit creates", op: "edit_file", args: `{"path":"new.txt","old_string":"","new_string":"n\n"}`, want: []string{"--- /dev/null", "+n"}},
		{name: "edit not found", op: "edit_file", args: `{"path":"a.txt","old_string":"tww","new_string":"x"}`, class: errdefs.ErrFailed},
		{name: "edit not unique", op: "edit_file", args: `{"path":"dupes.txt","old_string":"x","new_string":"y"}`, class: errdefs.ErrFailed},
		{name: "edit missing", op: "edit_file", args: `{"path":"nope/x","old_string":"a","new_string":"b"}`, class: errdefs.ErrFailed},
		{name: "delete file", op: "delete_path", args: `{"path":"a.txt"}`, want: []string{"Would delete the file a.txt (14 B)."}},
		{name: "delete link", op: "delete_path", args: `{"path":"link"}`, want: []string{"Would delete the symlink link (-> a.txt)"}},
		{name: "delete tree", op: "delete_path", args: `{"path":"tree","recursive":true}`,
			want: []string{"Would delete the directory tree and everything in it: 2 files, 1 directory, 12 B.", "  tree/x.go", "  tree/y/", "  tree/y/z"}},
		{name: "delete tree not recursive", op: "delete_path", args: `{"path":"tree"}`, class: errdefs.ErrFailed},
		{name: "delete empty", op: "delete_path", args: `{"path":"empty"}`, want: []string{"Would delete the empty directory empty."}},
		{name: "delete missing", op: "delete_path", args: `{"path":"nope"}`, class: errdefs.ErrFailed},
		{name: "delete root", op: "delete_path", args: `{"path":".","recursive":true}`, class: errdefs.ErrDenied},
		{name: "move", op: "move_path", args: `{"source":"a.txt","destination":"b/a.txt"}`,
			want: []string{"Would move the file a.txt (14 B) to b/a.txt, creating its parent directories."}},
		{name: "move into", op: "move_path", args: `{"source":"a.txt","destination":"docs/"}`, want: []string{"to docs/a.txt."}},
		{name: "move overwrite", op: "move_path", args: `{"source":"a.txt","destination":"sub/b.txt","overwrite":true}`,
			want: []string{"replacing the existing file (1 B)"}},
		{name: "move exists", op: "move_path", args: `{"source":"a.txt","destination":"sub/b.txt"}`, class: errdefs.ErrFailed},
		{name: "move dir", op: "move_path", args: `{"source":"tree","destination":"t2"}`, want: []string{"Would move the directory tree (2 files, 1 directory, 12 B) to t2."}},
		{name: "make_dir", op: "make_dir", args: `{"path":"m/n"}`, want: []string{"Would create the directory m/n and its missing parent directories."}},
		{name: "make_dir one", op: "make_dir", args: `{"path":"docs/m"}`, want: []string{"Would create the directory docs/m."}},
		{name: "make_dir exists", op: "make_dir", args: `{"path":"docs"}`, want: []string{"Nothing to do"}},
		{name: "make_dir file", op: "make_dir", args: `{"path":"a.txt"}`, class: errdefs.ErrFailed},
		{name: "read op", op: "read_file", args: `{"path":"a.txt"}`, want: []string{""}},
		// Outside the workspace, not allowed (yet): described, not read.
		{name: "outside write", op: "write_file", args: `{"path":"out/secret.txt","content":"x"}`,
			want: []string{"Would write 1 line, 1 B to " + filepath.Join(outside, "secret.txt") + " (outside the workspace; it exists, and its content is not shown)."},
			not:  []string{"root:secret"}},
		{name: "outside edit", op: "edit_file", args: `{"path":"out/secret.txt","old_string":"secret","new_string":"public"}`,
			want: []string{"Would edit " + filepath.Join(outside, "secret.txt"), "-secret\n", "+public\n"}, not: []string{"root:"}},
		{name: "outside delete", op: "delete_path", args: `{"path":"out/secret.txt"}`, want: []string{"Would delete " + filepath.Join(outside, "secret.txt") + " (outside the workspace)"}},
		{name: "outside move", op: "move_path", args: `{"source":"a.txt","destination":"out/a.txt"}`, want: []string{"outside the workspace"}},
		{name: "outside make_dir", op: "make_dir", args: `{"path":"out/m"}`, want: []string{"(outside the workspace)"}},
		// Outside and allowed: read like inside.
		{name: "outside allowed", op: "write_file", args: `{"path":"out/secret.txt","content":"root:public\n"}`, outside: []string{outside},
			want: []string{"-root:secret", "+root:public"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, files)
			before, beforeOut := snapshot(t, dir), snapshot(t, outside)
			got, err := previewCall(t, f, tt.op, tt.args, tt.outside...)
			sameSnapshot(t, dir, before)
			sameSnapshot(t, outside, beforeOut)
			if tt.class != nil {
				wantErr(t, err, tt.class)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("preview does not contain %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("preview contains %q:\n%s", n, got)
				}
			}
			if tt.op == "read_file" && got != "" {
				t.Errorf("preview of a read = %q", got)
			}
		})
	}
}
