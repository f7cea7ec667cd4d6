package fileops

import (
	"reflect"
	"testing"
)

// After codex-rs/apply-patch/src/parser.rs's tests: what a patch parses to.
func TestParsePatch(t *testing.T) {
	patch := "*** Begin Patch\n" +
		"*** Add File: path/add.py\n+abc\n+def\n" +
		"*** Delete File: path/delete.py\n" +
		"*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n+    return 123\n" +
		"*** Update File: file.py\n@@\n+line\n" +
		"*** Update File: c.py\n@@ change_context\n\n context\n-remove\n+add\n context2\n*** End of File\n" +
		"*** End Patch"
	got, err := parsePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	want := []patchHunk{
		{op: patchAdd, path: "path/add.py", contents: "abc\ndef\n"},
		{op: patchDelete, path: "path/delete.py"},
		{op: patchUpdate, path: "path/update.py", moveTo: "path/update2.py", chunks: []patchChunk{
			{context: []string{"def f():"}, old: []string{"    pass"}, new: []string{"    return 123"}, kept: []int{-1}},
		}},
		{op: patchUpdate, path: "file.py", chunks: []patchChunk{{new: []string{"line"}, kept: []int{-1}}}},
		{op: patchUpdate, path: "c.py", chunks: []patchChunk{{
			context: []string{"change_context"},
			old:     []string{"", "context", "remove", "context2"},
			new:     []string{"", "context", "add", "context2"},
			kept:    []int{0, 1, -1, 3},
			eof:     true,
		}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", got, want)
	}
}

func TestParsePatchErrorLines(t *testing.T) {
	for _, tt := range []struct{ patch, want string }{
		{"*** Begin Patch\n*** Update File: a\n@@\n*** End Patch", "invalid hunk at line 4, Update hunk does not contain any lines"},
		{"*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch", "invalid hunk at line 4, Update hunk does not contain any lines"},
		{"*** Begin Patch\n*** Add File: a\n+x\n*** Update File: b\n@@\nbad\n*** End Patch", "invalid hunk at line 6, Unexpected line found in update hunk: 'bad'"},
		{"*** Begin Patch\n*** Add File: a\n+x\nnot a header\n*** End Patch", "invalid hunk at line 4, 'not a header' is not a valid hunk header"},
	} {
		_, err := parsePatch(tt.patch)
		if err == nil || len(err.Error()) < len(tt.want) || err.Error()[:len(tt.want)] != tt.want {
			t.Errorf("%q: error %v, want %q", tt.patch, err, tt.want)
		}
	}
}

// After codex-rs/apply-patch/src/seek_sequence.rs's tests.
func TestSeekSequence(t *testing.T) {
	for _, tt := range []struct {
		name           string
		lines, pattern []string
		start          int
		eof            bool
		want           int
	}{
		{"exact", []string{"foo", "bar", "baz"}, []string{"bar", "baz"}, 0, false, 1},
		{"trailing whitespace", []string{"foo   ", "bar\t\t"}, []string{"foo", "bar"}, 0, false, 0},
		{"surrounding whitespace", []string{"    foo   ", "   bar\t"}, []string{"foo", "bar"}, 0, false, 0},
		{"pattern longer than input", []string{"just one line"}, []string{"too", "many", "lines"}, 0, false, -1},
		{"empty pattern", []string{"a"}, nil, 0, false, 0},
		{"from start", []string{"a", "b", "a"}, []string{"a"}, 1, false, 2},
		{"eof first", []string{"a", "b", "a"}, []string{"a"}, 0, true, 2},
		{"eof falls back", []string{"a", "b", "c"}, []string{"a"}, 0, true, 0},
		{"punctuation", []string{"x \u2014 \u201cq\u201d\u00a0it\u2019s"}, []string{"x - \"q\" it's"}, 0, false, 0},
		{"exact before fuzzy", []string{" a", "a"}, []string{"a"}, 0, false, 1},
		{"absent", []string{"a"}, []string{"b"}, 0, false, -1},
	} {
		if got := seekSequence(tt.lines, tt.pattern, tt.start, tt.eof); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
