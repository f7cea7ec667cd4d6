package fileops

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// The scenarios below follow codex's own (openai/codex,
// codex-rs/apply-patch/tests/fixtures/scenarios/NNN_*, and the unit tests
// of codex-rs/apply-patch/src/{lib,parser,seek_sequence}.rs), one case per
// scenario, named after it, with the same patch shapes and the same
// expected outcome, except where toold is deliberately stricter (015: a
// failure leaves nothing changed). testdata/apply_patch/ holds the
// example patch of codex's tool instructions.

// absent marks a file that must not exist.
const absent = "\x00absent"

// patchArgsJSON returns the arguments of an apply_patch call.
func patchArgsJSON(t *testing.T, patch string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"input": patch})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkTree checks the files of dir: content, or absent.
func checkTree(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	for name, content := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case content == absent && err == nil:
			t.Errorf("%s exists, want it absent; it holds %q", name, b)
		case content == absent:
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case string(b) != content:
			t.Errorf("%s = %q, want %q", name, b, content)
		}
	}
}

func TestApplyPatch(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		patch    string
		want     map[string]string
		wantText []string
	}{
		{
			name:     "001 add file",
			patch:    "*** Begin Patch\n*** Add File: bar.md\n+This is a new file\n*** End Patch\n",
			want:     map[string]string{"bar.md": "This is a new file\n"},
			wantText: []string{"Success. Updated the following files:\nA bar.md", "--- /dev/null", "+++ b/bar.md", "+This is a new file"},
		},
		{
			name:  "002 multiple operations",
			files: map[string]string{"delete.txt": "obsolete\n", "modify.txt": "line1\nline2\n"},
			patch: "*** Begin Patch\n*** Add File: nested/new.txt\n+created\n*** Delete File: delete.txt\n" +
				"*** Update File: modify.txt\n@@\n-line2\n+changed\n*** End Patch\n",
			want:     map[string]string{"nested/new.txt": "created\n", "delete.txt": absent, "modify.txt": "line1\nchanged\n"},
			wantText: []string{"A nested/new.txt\nM modify.txt\nD delete.txt", "(2 lines added, 2 lines removed)", "[deleted: 1 line]"},
		},
		{
			name:  "003 multiple chunks",
			files: map[string]string{"multi.txt": "line1\nline2\nline3\nline4\n"},
			patch: "*** Begin Patch\n*** Update File: multi.txt\n@@\n-line2\n+changed2\n@@\n-line4\n+changed4\n*** End Patch\n",
			want:  map[string]string{"multi.txt": "line1\nchanged2\nline3\nchanged4\n"},
		},
		{
			name:  "004 move to new directory",
			files: map[string]string{"old/name.txt": "old content\n", "old/other.txt": "unrelated file\n"},
			patch: "*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n-old content\n+new content\n*** End Patch\n",
			want: map[string]string{"old/name.txt": absent, "renamed/dir/name.txt": "new content\n",
				"old/other.txt": "unrelated file\n"},
			wantText: []string{"M renamed/dir/name.txt", "--- a/old/name.txt", "+++ b/renamed/dir/name.txt"},
		},
		{
			name:  "010 move overwrites existing destination",
			files: map[string]string{"old/name.txt": "from\n", "old/other.txt": "other\n", "renamed/dir/name.txt": "existing\n"},
			patch: "*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n-from\n+new\n*** End Patch\n",
			want:  map[string]string{"old/name.txt": absent, "renamed/dir/name.txt": "new\n", "old/other.txt": "other\n"},
		},
		{
			name:  "011 add overwrites existing file",
			files: map[string]string{"duplicate.txt": "old content\n"},
			patch: "*** Begin Patch\n*** Add File: duplicate.txt\n+new content\n*** End Patch\n",
			want:  map[string]string{"duplicate.txt": "new content\n"},
			// The diff shows what was replaced.
			wantText: []string{"A duplicate.txt", "-old content", "+new content"},
		},
		{
			name:  "014 update file appends trailing newline",
			files: map[string]string{"no_newline.txt": "no newline at end"},
			patch: "*** Begin Patch\n*** Update File: no_newline.txt\n@@\n-no newline at end\n+first line\n+second line\n*** End Patch\n",
			want:  map[string]string{"no_newline.txt": "first line\nsecond line\n"},
		},
		{
			name:  "016 pure addition update chunk",
			files: map[string]string{"input.txt": "line1\nline2\n"},
			patch: "*** Begin Patch\n*** Update File: input.txt\n@@\n+added line 1\n+added line 2\n*** End Patch\n",
			want:  map[string]string{"input.txt": "line1\nline2\nadded line 1\nadded line 2\n"},
		},
		{
			name:  "017 whitespace padded hunk header",
			files: map[string]string{"foo.txt": "old\n"},
			patch: "*** Begin Patch\n  *** Update File: foo.txt\n@@\n-old\n+new\n*** End Patch\n",
			want:  map[string]string{"foo.txt": "new\n"},
		},
		{
			name:  "018/020 whitespace padded patch markers",
			files: map[string]string{"file.txt": "one\n"},
			patch: "*** Begin Patch \n*** Update File: file.txt\n@@\n-one\n+two\n *** End Patch\n",
			want:  map[string]string{"file.txt": "two\n"},
		},
		{
			name:  "019 unicode",
			files: map[string]string{"foo.txt": "\u00a1Hola, mundo!\nGr\u00fc\u00dfe\n"},
			patch: "*** Begin Patch\n*** Update File: foo.txt\n@@\n-\u00a1Hola, mundo!\n+\u00a1Adi\u00f3s, mundo!\n Gr\u00fc\u00dfe\n*** End Patch\n",
			want:  map[string]string{"foo.txt": "\u00a1Adi\u00f3s, mundo!\nGr\u00fc\u00dfe\n"},
		},
		{
			name:  "020 delete file success",
			files: map[string]string{"obsolete.txt": "remove me\n", "keep.txt": "keep me\n"},
			patch: "*** Begin Patch\n*** Delete File: obsolete.txt\n*** End Patch\n",
			want:  map[string]string{"obsolete.txt": absent, "keep.txt": "keep me\n"},
		},
		{
			name:  "021 update file deletion only",
			files: map[string]string{"lines.txt": "line1\nline2\nline3\n"},
			patch: "*** Begin Patch\n*** Update File: lines.txt\n@@\n line1\n-line2\n line3\n*** End Patch\n",
			want:  map[string]string{"lines.txt": "line1\nline3\n"},
		},
		{
			name:  "022 update file end of file marker",
			files: map[string]string{"tail.txt": "first\nsecond\n"},
			patch: "*** Begin Patch\n*** Update File: tail.txt\n@@\n first\n-second\n+second updated\n*** End of File\n*** End Patch\n",
			want:  map[string]string{"tail.txt": "first\nsecond updated\n"},
		},
		{
			name:  "end of file marker picks the last occurrence",
			files: map[string]string{"f.txt": "x\nend\nx\nend\n"},
			patch: "*** Begin Patch\n*** Update File: f.txt\n@@\n-end\n+END\n*** End of File\n*** End Patch\n",
			want:  map[string]string{"f.txt": "x\nend\nx\nEND\n"},
		},
		{
			name:  "lib.rs: unicode dash matched by ASCII",
			files: map[string]string{"unicode.py": "import asyncio  # local import \u2013 avoids top\u2011level dep\n"},
			patch: "*** Begin Patch\n*** Update File: unicode.py\n@@\n-import asyncio  # local import - avoids top-level dep\n+import asyncio  # HELLO\n*** End Patch\n",
			want:  map[string]string{"unicode.py": "import asyncio  # HELLO\n"},
		},
		{
			name:  "a context line keeps the file's punctuation",
			files: map[string]string{"u.txt": "a \u2013 b\nc\n"},
			patch: "*** Begin Patch\n*** Update File: u.txt\n@@\n a - b\n-c\n+C\n*** End Patch\n",
			want:  map[string]string{"u.txt": "a \u2013 b\nC\n"},
		},
		{
			name:  "lib.rs: interleaved changes",
			files: map[string]string{"interleaved.txt": "a\nb\nc\nd\ne\nf\n"},
			patch: "*** Begin Patch\n*** Update File: interleaved.txt\n@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n@@\n f\n+g\n*** End of File\n*** End Patch",
			want:  map[string]string{"interleaved.txt": "a\nB\nc\nd\nE\nf\ng\n"},
		},
		{
			name:  "lib.rs: pure addition chunk followed by removal",
			files: map[string]string{"panic.txt": "line1\nline2\nline3\n"},
			patch: "*** Begin Patch\n*** Update File: panic.txt\n@@\n+after-context\n+second-line\n@@\n line1\n-line2\n-line3\n+line2-replacement\n*** End Patch",
			want:  map[string]string{"panic.txt": "line1\nline2-replacement\nafter-context\nsecond-line\n"},
		},
		{
			name:  "parser.rs: first chunk without @@",
			files: map[string]string{"file2.py": "import foo\n"},
			patch: "*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch",
			want:  map[string]string{"file2.py": "import foo\nbar\n"},
		},
		{
			name:  "parser.rs: heredoc <<'EOF'",
			files: map[string]string{"file2.py": "import foo\n"},
			patch: "<<'EOF'\n*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch\nEOF\n",
			want:  map[string]string{"file2.py": "import foo\nbar\n"},
		},
		{
			name:  "in a Markdown fence",
			files: map[string]string{"a.txt": "x\n"},
			patch: "```diff\n*** Begin Patch\n*** Update File: a.txt\n-x\n+y\n*** End Patch\n```\n",
			want:  map[string]string{"a.txt": "y\n"},
		},
		{
			name:  "heredoc with the apply_patch command",
			files: map[string]string{"a.txt": "x\n"},
			patch: "apply_patch <<\"EOF\"\n*** Begin Patch\n*** Update File: a.txt\n-x\n+y\n*** End Patch\nEOF",
			want:  map[string]string{"a.txt": "y\n"},
		},
		{
			name:  "@@ context selects the function",
			files: map[string]string{"f.py": "def a():\n    pass\n\ndef f():\n    pass\n"},
			patch: "*** Begin Patch\n*** Update File: f.py\n@@ def f():\n-    pass\n+    return 123\n*** End Patch",
			want:  map[string]string{"f.py": "def a():\n    pass\n\ndef f():\n    return 123\n"},
		},
		{
			name: "several @@ lines narrow step by step",
			files: map[string]string{"c.py": "class Other:\n    def method(self):\n        return 1\n" +
				"class BaseClass:\n    def other(self):\n        return 1\n    def method(self):\n        return 1\n"},
			patch: "*** Begin Patch\n*** Update File: c.py\n@@ class BaseClass:\n@@     def method(self):\n-        return 1\n+        return 2\n*** End Patch",
			want: map[string]string{"c.py": "class Other:\n    def method(self):\n        return 1\n" +
				"class BaseClass:\n    def other(self):\n        return 1\n    def method(self):\n        return 2\n"},
		},
		{
			// Context lines keep the file's whitespace (codex would write
			// the patch's).
			name:  "seek_sequence: trailing and leading whitespace ignored",
			files: map[string]string{"w.txt": "    foo   \n   bar\t\nbaz\n"},
			patch: "*** Begin Patch\n*** Update File: w.txt\n@@\n foo\n bar\n-baz\n+BAZ\n*** End Patch",
			want:  map[string]string{"w.txt": "    foo   \n   bar\t\nBAZ\n"},
		},
		{
			name:  "CRLF file keeps CRLF",
			files: map[string]string{"crlf.txt": "a\r\nb\r\nc\r\n"},
			patch: "*** Begin Patch\n*** Update File: crlf.txt\n@@\n a\n-b\n+B\n@@\n c\n+d\n*** End of File\n*** End Patch",
			want:  map[string]string{"crlf.txt": "a\r\nB\r\nc\r\nd\r\n"},
		},
		{
			name:  "CRLF patch text on an LF file",
			files: map[string]string{"lf.txt": "a\nb\n"},
			patch: "*** Begin Patch\r\n*** Update File: lf.txt\r\n@@\r\n-b\r\n+c\r\n*** End Patch\r\n",
			want:  map[string]string{"lf.txt": "a\nc\n"},
		},
		{
			name:  "add then update the same file",
			patch: "*** Begin Patch\n*** Add File: n.txt\n+one\n*** Update File: n.txt\n@@\n-one\n+two\n*** End Patch",
			want:  map[string]string{"n.txt": "two\n"},
		},
		{
			name:  "blank lines between chunks and an empty context line",
			files: map[string]string{"b.txt": "a\n\nb\nc\n"},
			patch: "*** Begin Patch\n*** Update File: b.txt\n@@\n a\n\n-b\n+B\n\n@@\n-c\n+C\n*** End Patch",
			want:  map[string]string{"b.txt": "a\n\nB\nC\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, tt.files)
			res := mustRun(t, f, "apply_patch", patchArgsJSON(t, tt.patch))
			checkTree(t, dir, tt.want)
			for _, w := range tt.wantText {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result does not contain %q:\n%s", w, res.Text)
				}
			}
			leftoverTemps(t, dir)
		})
	}
}

// leftoverTemps fails when dir holds temporary files of a write.
func leftoverTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".toold-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func TestApplyPatchErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		patch string
		class error
		parts []string
	}{
		{
			name:  "005 rejects empty patch",
			files: map[string]string{"foo.txt": "stable\n"},
			patch: "*** Begin Patch\n*** End Patch\n",
			class: errdefs.ErrInvalidArgument,
			parts: []string{"No files were modified"},
		},
		{
			name:  "006 rejects missing context",
			files: map[string]string{"modify.txt": "line1\nline2\n"},
			patch: "*** Begin Patch\n*** Update File: modify.txt\n@@\n-missing\n+changed\n*** End Patch\n",
			class: errdefs.ErrFailed,
			parts: []string{"Failed to find expected lines in modify.txt:\nmissing", "Nothing was changed."},
		},
		{
			name:  "007 rejects missing file delete",
			files: map[string]string{"foo.txt": "stable\n"},
			patch: "*** Begin Patch\n*** Delete File: missing.txt\n*** End Patch\n",
			class: errdefs.ErrFailed,
			parts: []string{"Failed to delete file missing.txt"},
		},
		{
			name:  "008 rejects empty update hunk",
			files: map[string]string{"foo.txt": "stable\n"},
			patch: "*** Begin Patch\n*** Update File: foo.txt\n*** End Patch\n",
			class: errdefs.ErrInvalidArgument,
			parts: []string{"invalid hunk at line 2, Update file hunk for path 'foo.txt' is empty"},
		},
		{
			name:  "009 requires existing file for update",
			files: map[string]string{"foo.txt": "stable\n"},
			patch: "*** Begin Patch\n*** Update File: missing.txt\n@@\n-old\n+new\n*** End Patch\n",
			class: errdefs.ErrFailed,
			parts: []string{"Failed to read file to update missing.txt", "*** Add File:"},
		},
		{
			name:  "012 delete directory fails",
			files: map[string]string{"dir/foo.txt": "stable\n"},
			patch: "*** Begin Patch\n*** Delete File: dir\n*** End Patch\n",
			class: errdefs.ErrFailed,
			parts: []string{"dir is a directory"},
		},
		{
			name:  "013 rejects invalid hunk header",
			files: map[string]string{"foo.txt": "stable\n"},
			patch: "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch\n",
			class: errdefs.ErrInvalidArgument,
			parts: []string{"invalid hunk at line 2, '*** Frobnicate File: foo' is not a valid hunk header. " +
				"Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"},
		},
		{
			// codex leaves created.txt behind; toold changes nothing.
			name:  "015 failure after partial success changes nothing",
			patch: "*** Begin Patch\n*** Add File: created.txt\n+hello\n*** Update File: missing.txt\n@@\n-old\n+new\n*** End Patch\n",
			class: errdefs.ErrFailed,
			parts: []string{"Failed to read file to update missing.txt"},
		},
		{
			name:  "first line",
			patch: "bad",
			class: errdefs.ErrInvalidArgument,
			parts: []string{"invalid patch: The first line of the patch must be '*** Begin Patch'"},
		},
		{
			name:  "missing end marker",
			files: map[string]string{"a.txt": "x\n"},
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+y\n",
			class: errdefs.ErrInvalidArgument,
			parts: []string{"invalid patch: The last line of the patch must be '*** End Patch'"},
		},
		{
			name:  "heredoc missing its end marker",
			patch: "<<EOF\n*** Begin Patch\n*** Update File: file2.py\nEOF\n",
			class: errdefs.ErrInvalidArgument,
			parts: []string{"The last line of the patch must be '*** End Patch'"},
		},
		{
			name:  "mismatched heredoc quotes",
			patch: "<<\"EOF'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nEOF\n",
			class: errdefs.ErrInvalidArgument,
			parts: []string{"The first line of the patch must be '*** Begin Patch'"},
		},
		{
			name:  "unexpected line in update hunk",
			files: map[string]string{"a.txt": "x\n"},
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@\nbad\n*** End Patch",
			class: errdefs.ErrInvalidArgument,
			parts: []string{"invalid hunk at line 4, Unexpected line found in update hunk: 'bad'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"},
		},
		{
			name:  "second chunk without @@",
			files: map[string]string{"a.txt": "x\n"},
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+y\n*** End of File\n-z\n*** End Patch",
			class: errdefs.ErrInvalidArgument,
			parts: []string{"Expected update hunk to start with a @@ context marker, got: '-z'"},
		},
		{
			name:  "context not found names the file and the line",
			files: map[string]string{"f.py": "def f():\n    pass\n"},
			patch: "*** Begin Patch\n*** Update File: f.py\n@@ def nope():\n-    pass\n+    return 1\n*** End Patch",
			class: errdefs.ErrFailed,
			parts: []string{"Failed to find context 'def nope():' in f.py", "Nothing was changed."},
		},
		{
			name:  "lines not found show the closest lines",
			files: map[string]string{"g.go": "package g\n\nfunc Hello() string {\n\treturn \"hello\"\n}\n"},
			patch: "*** Begin Patch\n*** Update File: g.go\n@@\n func Hello() string {\n-\treturn \"helo\"\n+\treturn \"hi\"\n*** End Patch",
			class: errdefs.ErrFailed,
			parts: []string{"Failed to find expected lines in g.go:\nfunc Hello() string {\n\treturn \"helo\"",
				"The most similar lines of g.go are at lines 3-4", "     4\t\treturn \"hello\""},
		},
		{
			name:  "path outside the workspace",
			patch: "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch",
			class: errdefs.ErrDenied,
			parts: []string{"outside the workspace"},
		},
		{
			name:  "move destination outside the workspace",
			files: map[string]string{"a.txt": "x\n"},
			patch: "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../b.txt\n@@\n-x\n+y\n*** End Patch",
			class: errdefs.ErrDenied,
			parts: []string{"outside the workspace"},
		},
		{
			name:  "binary file",
			files: map[string]string{"bin.dat": "a\x00b\n"},
			patch: "*** Begin Patch\n*** Update File: bin.dat\n@@\n-a\n+b\n*** End Patch",
			class: errdefs.ErrFailed,
			parts: []string{"bin.dat is a binary file"},
		},
		{
			name:  "a directory path",
			patch: "*** Begin Patch\n*** Add File: sub/\n+x\n*** End Patch",
			class: errdefs.ErrInvalidArgument,
			parts: []string{`the path "sub/" in the patch ends with /`},
		},
		{
			name:  "no path",
			patch: "*** Begin Patch\n*** Delete File: \n*** End Patch",
			class: errdefs.ErrInvalidArgument,
			parts: []string{"is not a valid hunk header"},
		},
		{
			name:  "the workspace root",
			patch: "*** Begin Patch\n*** Delete File: .\n*** End Patch",
			class: errdefs.ErrDenied,
			parts: []string{"workspace root"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, tt.files)
			before := snapshot(t, dir)
			_, err := run(t, f, "apply_patch", patchArgsJSON(t, tt.patch))
			wantErr(t, err, tt.class, tt.parts...)
			if after := snapshot(t, dir); !maps.Equal(before, after) {
				t.Errorf("the workspace changed:\nbefore %v\nafter  %v", before, after)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.txt")); err == nil {
				t.Error("a file was written outside the workspace")
			}
		})
	}
}

// TestApplyPatchRollback makes a step of the commit fail for real, after
// other steps succeeded, by putting a directory where the patch writes or
// deletes a file once the patch was planned: every file gets its old
// content (and mode) back, and directories made for new files go.
func TestApplyPatchRollback(t *testing.T) {
	files := map[string]string{
		"a.txt":       "a1\n",
		"c1.txt":      "c1\n",
		"c2.txt":      "c2\n",
		"d.txt":       "d1\n",
		"keep/e.txt":  "e1\n",
		"crlf.txt":    "x\r\ny\r\n",
		"zz/last.txt": "last\n",
	}
	patch := "*** Begin Patch\n" +
		"*** Update File: a.txt\n@@\n-a1\n+a2\n" +
		"*** Add File: new/deep/b.txt\n+b\n" +
		"*** Update File: crlf.txt\n@@\n-y\n+Y\n" +
		"*** Delete File: c1.txt\n" +
		"*** Update File: keep/e.txt\n*** Move to: moved/e.txt\n@@\n-e1\n+e2\n" +
		"*** Delete File: c2.txt\n" +
		"*** Update File: %s\n@@\n-%s\n+changed\n" +
		"*** End Patch"
	tests := []struct {
		name, target, old string
		// inTheWay puts a directory where the patch will change target.
		inTheWay func(t *testing.T, dir string)
		parts    []string
	}{
		{
			name: "write step", target: "zz/last.txt", old: "last",
			inTheWay: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "zz/last.txt")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			parts: []string{"applying the patch failed at zz/last.txt", "Nothing was changed"},
		},
		{
			// c2.txt is deleted after c1.txt, and after every write.
			name: "delete step", target: "d.txt", old: "d1",
			inTheWay: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "c2.txt")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				writeTree(t, dir, map[string]string{"c2.txt/inside": "x"})
			},
			parts: []string{"applying the patch failed at c2.txt", "Nothing was changed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, files)
			if err := os.Chmod(filepath.Join(dir, "c1.txt"), 0o600); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			testHookPatchPlanned = func() { tt.inTheWay(t, dir) }
			defer func() { testHookPatchPlanned = nil }()
			_, err := run(t, f, "apply_patch", patchArgsJSON(t, fmt.Sprintf(patch, tt.target, tt.old)))
			wantErr(t, err, errdefs.ErrFailed, tt.parts...)
			after := snapshot(t, dir)
			// Everything but what the test put in the way is as before.
			for k, v := range before {
				if strings.HasPrefix(k, "c2.txt") && tt.name == "delete step" || strings.HasPrefix(k, "zz/last.txt") && tt.name == "write step" {
					continue
				}
				if after[k] != v {
					t.Errorf("%s = %q after the rollback, want %q", k, after[k], v)
				}
			}
			for k := range after {
				if _, ok := before[k]; !ok && !strings.HasPrefix(k, "c2.txt") && !strings.HasPrefix(k, "zz/last.txt") {
					t.Errorf("%s was left behind by the rollback", k)
				}
			}
			leftoverTemps(t, dir)
		})
	}
}

// TestApplyPatchConcurrent runs patches that touch the same files, named
// in opposite orders, at the same time: they wait for each other (nothing
// is lost) and never deadlock.
func TestApplyPatchConcurrent(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"a.txt": "start\n", "b.txt": "start\n"})
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		for _, order := range [][2]string{{"a.txt", "b.txt"}, {"b.txt", "a.txt"}} {
			wg.Go(func() {
				p := fmt.Sprintf("*** Begin Patch\n*** Update File: %s\n@@\n+%s-%d\n*** Update File: %s\n@@\n+%s-%d\n*** End Patch",
					order[0], order[0], i, order[1], order[0], i)
				a, _ := tools.DecodeArguments(patchArgsJSON(t, p))
				_, err := f.Run(context.Background(), &tools.Call{ID: "c", Tool: ToolName, Operation: "apply_patch", Args: a}, nil)
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a.txt", "b.txt"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if got := strings.Count(string(b), "\n"); got != 1+2*n {
			t.Errorf("%s has %d lines, want %d: updates were lost", name, got, 1+2*n)
		}
	}
	if f.locks.size() != 0 {
		t.Errorf("%d lock keys left", f.locks.size())
	}
}

func TestApplyPatchDescribe(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, nil)
	patch := "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: b.txt\n*** Move to: c/b.txt\n@@\n-x\n+y\n" +
		"*** Delete File: d.txt\n*** Update File: e.txt\n@@\n-x\n+y\n*** End Patch"
	a, _ := tools.DecodeArguments(patchArgsJSON(t, patch))
	e := f.Describe(&tools.Call{Tool: ToolName, Operation: "apply_patch", Args: a})
	if want := []string{"a.txt", "b.txt", "c/b.txt", "d.txt", "e.txt"}; !slices.Equal(e.Writes, want) {
		t.Errorf("Writes = %q, want %q", e.Writes, want)
	}
	if want := []string{"b.txt", "d.txt", "e.txt"}; !slices.Equal(e.Reads, want) {
		t.Errorf("Reads = %q, want %q", e.Reads, want)
	}
	if e.Risk != tools.RiskHigh {
		t.Errorf("Risk = %v, want high for a patch that deletes and moves", e.Risk)
	}
	if !strings.HasPrefix(e.Display, "Applying patch: a.txt, b.txt, c/b.txt and 2 more") {
		t.Errorf("Display = %q", e.Display)
	}
	a, _ = tools.DecodeArguments(patchArgsJSON(t, "*** Begin Patch\n*** Update File: e.txt\n@@\n-x\n+y\n*** End Patch"))
	if e := f.Describe(&tools.Call{Tool: ToolName, Operation: "apply_patch", Args: a}); e.Risk != 0 {
		t.Errorf("Risk = %v for an update only, want the operation's (unset)", e.Risk)
	}
}

// TestApplyPatchSensitive: a patch that names a sensitive file is denied
// by policy on the Effect (every path is in it, a move's destination too),
// and refused at use by the guard should it run anyway.
func TestApplyPatchSensitive(t *testing.T) {
	f, dir, _ := guardedTool(t)
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: f.ws})
	if err != nil {
		t.Fatal(err)
	}
	for _, patch := range []string{
		"*** Begin Patch\n*** Update File: .env\n@@\n-ENV-CANARY\n+X\n*** End Patch",
		"*** Begin Patch\n*** Add File: plain/g\n+x\n*** Delete File: .env\n*** End Patch",
		"*** Begin Patch\n*** Update File: plain/f\n*** Move to: .env\n@@\n-harmless\n+X=1\n*** End Patch",
	} {
		a, _ := tools.DecodeArguments(patchArgsJSON(t, patch))
		call := &tools.Call{ID: "c", Tool: ToolName, Operation: "apply_patch", Args: a}
		eff := f.Describe(call)
		v, err := e.Authorize(context.Background(), &authz.Request{
			ConversationID: "conv", CallID: "c", Mode: authz.ModeAuto, Tool: ToolName, Operation: "apply_patch",
			Args: a, Effect: eff, Risk: tools.RiskMedium,
		})
		if err != nil {
			t.Fatal(err)
		}
		if v.Decision != authz.Deny {
			t.Errorf("%q: decision %v (%s), want deny", patch, v.Decision, v.Reason)
		}
		_, err = f.Run(context.Background(), call, nil)
		wantErr(t, err, errdefs.ErrDenied)
	}
	checkTree(t, dir, map[string]string{".env": "ENV-CANARY\n", "plain/f": "harmless\n", "plain/g": absent})
}

func TestApplyPatchPreview(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"a.txt": "one\ntwo\n", "d.txt": "gone1\ngone2\n", "m.txt": "m\n"})
	patch := "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+TWO\n*** Add File: n/b.txt\n+new\n" +
		"*** Delete File: d.txt\n*** Update File: m.txt\n*** Move to: moved/m.txt\n@@\n-m\n+M\n*** End Patch"
	a, _ := tools.DecodeArguments(patchArgsJSON(t, patch))
	before := snapshot(t, dir)
	got, err := f.Preview(context.Background(), &tools.Call{Tool: ToolName, Operation: "apply_patch", Args: a})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Would change 4 files (3 lines added, 4 lines removed)",
		"--- a/a.txt\n+++ b/a.txt", "-two\n+TWO",
		"--- /dev/null\n+++ b/n/b.txt", "+new",
		"--- a/d.txt\n+++ /dev/null", "-gone1\n-gone2",
		"--- a/m.txt\n+++ b/moved/m.txt", "-m\n+M",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("preview does not contain %q:\n%s", want, got)
		}
	}
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Error("the preview changed the workspace")
	}
	// A patch that cannot apply fails in the preview: nobody is asked.
	a, _ = tools.DecodeArguments(patchArgsJSON(t, "*** Begin Patch\n*** Update File: a.txt\n@@\n-nope\n+x\n*** End Patch"))
	_, err = f.Preview(context.Background(), &tools.Call{Tool: ToolName, Operation: "apply_patch", Args: a})
	wantErr(t, err, errdefs.ErrFailed, "Failed to find expected lines in a.txt")
}

// TestApplyPatchDocExample applies the example of codex's tool
// instructions (testdata/apply_patch/instructions_example.patch).
func TestApplyPatchDocExample(t *testing.T) {
	patch, err := os.ReadFile("testdata/apply_patch/instructions_example.patch")
	if err != nil {
		t.Fatal(err)
	}
	f, dir := newTool(t, tools.Limits{}, map[string]string{
		"src/app.py":   "def greet():\nprint(\"Hi\")\n",
		"obsolete.txt": "old\n",
	})
	res := mustRun(t, f, "apply_patch", patchArgsJSON(t, string(patch)))
	checkTree(t, dir, map[string]string{
		"hello.txt":    "Hello world\n",
		"src/app.py":   absent,
		"src/main.py":  "def greet():\nprint(\"Hello, world!\")\n",
		"obsolete.txt": absent,
	})
	if want := "Success. Updated the following files:\nA hello.txt\nM src/main.py\nD obsolete.txt\n"; !strings.HasPrefix(res.Text, want) {
		t.Errorf("result starts %q, want %q", res.Text, want)
	}
	if got := res.Structured["lines_added"]; got != 2 {
		t.Errorf("lines_added = %v, want 2", got)
	}
}

// TestApplyPatchTooLarge: a patch holds at most maxPatchBytes of files in
// memory.
func TestApplyPatchTooLarge(t *testing.T) {
	big := strings.Repeat("0123456789abcdef\n", maxEditBytes/17-1)
	files := map[string]string{}
	var p strings.Builder
	p.WriteString("*** Begin Patch\n")
	for i := range maxPatchBytes/(2*len(big)) + 1 {
		name := fmt.Sprintf("f%d.txt", i)
		files[name] = big
		fmt.Fprintf(&p, "*** Update File: %s\n@@\n+end\n", name)
	}
	p.WriteString("*** End Patch")
	f, dir := newTool(t, tools.Limits{}, files)
	_, err := run(t, f, "apply_patch", patchArgsJSON(t, p.String()))
	wantErr(t, err, errdefs.ErrFailed, "the most one patch holds; split it into several patches. Nothing was changed.")
	b, _ := os.ReadFile(filepath.Join(dir, "f0.txt"))
	if string(b) != big {
		t.Error("f0.txt changed")
	}
}

// TestApplyPatchRollbackReadOnly: a file added in a read-only directory
// fails at the commit (planning only reads), after a.txt was written; a.txt
// gets its content back. Root ignores permissions, so the test needs
// another user; TestApplyPatchRollback covers the same as root.
func TestApplyPatchRollbackReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which ignores directory permissions; TestApplyPatchRollback makes the commit fail instead")
	}
	f, dir := newTool(t, tools.Limits{}, map[string]string{"a.txt": "a1\n", "ro/": ""})
	if err := os.Chmod(filepath.Join(dir, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "ro"), 0o755) })
	before := snapshot(t, dir)
	_, err := run(t, f, "apply_patch", patchArgsJSON(t, "*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+a2\n*** Add File: ro/new.txt\n+x\n*** End Patch"))
	wantErr(t, err, errdefs.ErrFailed, "applying the patch failed at ro/new.txt", "Nothing was changed")
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("the workspace changed:\nbefore %v\nafter  %v", before, after)
	}
}
