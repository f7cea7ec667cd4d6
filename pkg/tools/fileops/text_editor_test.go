package fileops

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// editor runs the text editor with args.
func editor(t *testing.T, f *FileOperations, args map[string]any) (*tools.Result, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, f, textEditorName, string(b))
}

// TestTextEditorTranscript replays testdata/text_editor/transcript.json,
// after the example of Anthropic's documentation (see the README there).
func TestTextEditorTranscript(t *testing.T) {
	primes, err := os.ReadFile("testdata/text_editor/primes.py")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/text_editor/transcript.json")
	if err != nil {
		t.Fatal(err)
	}
	var steps []struct {
		Note  string         `json:"note"`
		Args  map[string]any `json:"args"`
		Want  []string       `json:"want"`
		Not   []string       `json:"not"`
		Error []string       `json:"error"`
	}
	if err := json.Unmarshal(raw, &steps); err != nil {
		t.Fatal(err)
	}
	f, dir := newTool(t, tools.Limits{}, map[string]string{"primes.py": string(primes)})
	for i, s := range steps {
		res, err := editor(t, f, s.Args)
		what := fmt.Sprintf("step %d (%s) %v", i, s.Note, s.Args)
		if s.Error != nil {
			if err == nil {
				t.Fatalf("%s: no error, result:\n%s", what, res.Text)
			}
			for _, w := range s.Error {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error does not contain %q:\n%s", what, w, err)
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, w := range s.Want {
			if !strings.Contains(res.Text, w) {
				t.Errorf("%s: result does not contain %q:\n%s", what, w, res.Text)
			}
		}
		for _, w := range s.Not {
			if strings.Contains(res.Text, w) {
				t.Errorf("%s: result contains %q:\n%s", what, w, res.Text)
			}
		}
	}
	// Every edit was undone: the file is as it was.
	checkTree(t, dir, map[string]string{"primes.py": string(primes), "test_primes.py": absent})
}

func TestTextEditor(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		args     map[string]any
		want     map[string]string
		wantText []string
	}{
		{
			name:  "str_replace deletes with new_str absent",
			files: map[string]string{"f.txt": "a\nb\nc\n"},
			args:  map[string]any{"command": "str_replace", "path": "f.txt", "old_str": "b\n"},
			want:  map[string]string{"f.txt": "a\nc\n"},
		},
		{
			name:  "str_replace on a CRLF file keeps CRLF",
			files: map[string]string{"w.txt": "one\r\ntwo\r\nthree\r\n"},
			args:  map[string]any{"command": "str_replace", "path": "w.txt", "old_str": "one\ntwo\n", "new_str": "one\nTWO\nextra\n"},
			want:  map[string]string{"w.txt": "one\r\nTWO\r\nextra\r\nthree\r\n"},
		},
		{
			name:  "insert in a CRLF file",
			files: map[string]string{"w.txt": "a\r\nb\r\n"},
			args:  map[string]any{"command": "insert", "path": "w.txt", "insert_line": 1, "insert_text": "x\ny"},
			want:  map[string]string{"w.txt": "a\r\nx\r\ny\r\nb\r\n"},
		},
		{
			name:  "insert with new_str (text_editor_20250124)",
			files: map[string]string{"f.txt": "a\nb\n"},
			args:  map[string]any{"command": "insert", "path": "f.txt", "insert_line": 2, "new_str": "c\n"},
			want:  map[string]string{"f.txt": "a\nb\nc\n"},
		},
		{
			name:  "insert after a last line without newline",
			files: map[string]string{"f.txt": "a\nb"},
			args:  map[string]any{"command": "insert", "path": "f.txt", "insert_line": 2, "insert_text": "c"},
			want:  map[string]string{"f.txt": "a\nb\nc"},
		},
		{
			name:  "insert into an empty file",
			files: map[string]string{"e.txt": ""},
			args:  map[string]any{"command": "insert", "path": "e.txt", "insert_line": 0, "insert_text": "first"},
			want:  map[string]string{"e.txt": "first\n"},
		},
		{
			name:     "create makes parent directories",
			args:     map[string]any{"command": "create", "path": "a/b/new.py", "file_text": "print(1)\n"},
			want:     map[string]string{"a/b/new.py": "print(1)\n"},
			wantText: []string{"File created successfully at: a/b/new.py", "Created the missing parent directories a, a/b."},
		},
		{
			name:     "view a directory two levels deep",
			files:    map[string]string{"d/x.txt": "x", "d/sub/y.txt": "y", "d/sub/deeper/z.txt": "z"},
			args:     map[string]any{"command": "view", "path": "d"},
			wantText: []string{"x.txt", "sub/", "y.txt"},
		},
		{
			name:     "view an absolute path inside the workspace",
			files:    map[string]string{"f.txt": "hello\n"},
			args:     map[string]any{"command": "view", "path": "$WS/f.txt"},
			wantText: []string{"     1\thello"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, tt.files)
			if p, ok := tt.args["path"].(string); ok {
				tt.args["path"] = strings.ReplaceAll(p, "$WS", dir)
			}
			res, err := editor(t, f, tt.args)
			if err != nil {
				t.Fatal(err)
			}
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

func TestTextEditorErrors(t *testing.T) {
	files := map[string]string{"f.py": "x = 1\ny = 2\nx = 1\n", "dir/a.txt": "a\n"}
	tests := []struct {
		name  string
		args  map[string]any
		class error
		parts []string
	}{
		{"unknown command", map[string]any{"command": "delete", "path": "f.py"}, errdefs.ErrInvalidArgument,
			[]string{"Unrecognized command delete. The allowed commands for the str_replace_based_edit_tool tool are: view, create, str_replace, insert, undo_edit"}},
		{"create without file_text", map[string]any{"command": "create", "path": "n.py"}, errdefs.ErrInvalidArgument,
			[]string{"Parameter `file_text` is required for command: create"}},
		{"str_replace without old_str", map[string]any{"command": "str_replace", "path": "f.py"}, errdefs.ErrInvalidArgument,
			[]string{"Parameter `old_str` is required for command: str_replace"}},
		{"insert without insert_line", map[string]any{"command": "insert", "path": "f.py", "insert_text": "z"}, errdefs.ErrInvalidArgument,
			[]string{"Parameter `insert_line` is required for command: insert"}},
		{"insert without text", map[string]any{"command": "insert", "path": "f.py", "insert_line": 0}, errdefs.ErrInvalidArgument,
			[]string{"Parameter `insert_text` (or `new_str`) is required for command: insert"}},
		{"not unique", map[string]any{"command": "str_replace", "path": "f.py", "old_str": "x = 1", "new_str": "x = 2"}, errdefs.ErrFailed,
			[]string{"No replacement was performed. Found 2 matches for replacement text in f.py (at lines 1 and 3). Please provide more context to make a unique match."}},
		{"whitespace differs", map[string]any{"command": "str_replace", "path": "f.py", "old_str": "y  =  2", "new_str": "y = 3"}, errdefs.ErrFailed,
			[]string{"No replacement was performed, old_str `y  =  2` did not appear verbatim in f.py.", "whitespace or indentation differs", "     2\ty = 2"}},
		{"no change", map[string]any{"command": "str_replace", "path": "f.py", "old_str": "y = 2", "new_str": "y = 2"}, errdefs.ErrInvalidArgument,
			[]string{"No replacement was performed: old_str and new_str are the same"}},
		{"edit a directory", map[string]any{"command": "str_replace", "path": "dir", "old_str": "a", "new_str": "b"}, errdefs.ErrFailed,
			[]string{"The path dir is a directory and only the `view` command can be used on directories"}},
		{"view_range on a directory", map[string]any{"command": "view", "path": "dir", "view_range": []int{1, 2}}, errdefs.ErrInvalidArgument,
			[]string{"The `view_range` parameter is not allowed when `path` points to a directory."}},
		{"view_range of one number", map[string]any{"command": "view", "path": "f.py", "view_range": []int{1}}, errdefs.ErrInvalidArgument,
			[]string{"Invalid `view_range`. It should be a list of two integers."}},
		{"view_range backwards", map[string]any{"command": "view", "path": "f.py", "view_range": []int{3, 2}}, errdefs.ErrInvalidArgument,
			[]string{"Its second element `2` should be larger or equal than its first `3`"}},
		{"str_replace on a missing file", map[string]any{"command": "str_replace", "path": "nope/f.py", "old_str": "a", "new_str": "b"}, errdefs.ErrFailed,
			[]string{"The path nope/f.py does not exist. Please provide a valid path."}},
		{"undo without history", map[string]any{"command": "undo_edit", "path": "f.py"}, errdefs.ErrFailed,
			[]string{"No edit history found for f.py."}},
		{"outside the workspace", map[string]any{"command": "create", "path": "../out.py", "file_text": "x"}, errdefs.ErrDenied,
			[]string{"outside the workspace"}},
		{"view outside the workspace", map[string]any{"command": "view", "path": "../"}, errdefs.ErrDenied,
			[]string{"outside the workspace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, files)
			before := snapshot(t, dir)
			_, err := editor(t, f, tt.args)
			wantErr(t, err, tt.class, tt.parts...)
			if after := snapshot(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("the workspace changed")
			}
		})
	}
}

// TestTextEditorSensitive: the guard refuses a sensitive file to every
// command, view included.
func TestTextEditorSensitive(t *testing.T) {
	f, dir, _ := guardedTool(t)
	for _, args := range []map[string]any{
		{"command": "view", "path": ".env"},
		{"command": "str_replace", "path": ".env", "old_str": "ENV", "new_str": "X"},
		{"command": "insert", "path": ".env", "insert_line": 0, "insert_text": "X=1"},
		{"command": "create", "path": "vault.key/g", "file_text": "x"},
	} {
		_, err := editor(t, f, args)
		wantErr(t, err, errdefs.ErrDenied)
	}
	checkTree(t, dir, map[string]string{".env": "ENV-CANARY\n", "vault.key/g": absent})
}

func TestTextEditorUndo(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"f.txt": "v0\n"})
	for i := 1; i <= 3; i++ {
		if _, err := editor(t, f, map[string]any{"command": "str_replace", "path": "f.txt", "old_str": fmt.Sprintf("v%d", i-1), "new_str": fmt.Sprintf("v%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Another conversation has no history of these edits.
	a, _ := tools.DecodeArguments(`{"command":"undo_edit","path":"f.txt"}`)
	_, err := f.Run(context.Background(), &tools.Call{ConversationID: "other", Tool: ToolName, Operation: textEditorName, Args: a}, nil)
	wantErr(t, err, errdefs.ErrFailed, "No edit history found for f.txt.")
	for i := 2; i >= 0; i-- {
		if _, err := editor(t, f, map[string]any{"command": "undo_edit", "path": "f.txt"}); err != nil {
			t.Fatal(err)
		}
		checkTree(t, dir, map[string]string{"f.txt": fmt.Sprintf("v%d\n", i)})
	}
	_, err = editor(t, f, map[string]any{"command": "undo_edit", "path": "f.txt"})
	wantErr(t, err, errdefs.ErrFailed, "No edit history found for f.txt.")

	// A change made since by something else is never undone over.
	if _, err := editor(t, f, map[string]any{"command": "insert", "path": "f.txt", "insert_line": 1, "insert_text": "mine"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = editor(t, f, map[string]any{"command": "undo_edit", "path": "f.txt"})
	wantErr(t, err, errdefs.ErrFailed, "f.txt changed since the last edit", "nothing was undone")
	checkTree(t, dir, map[string]string{"f.txt": "theirs\n"})
}

func TestEditHistoryBounds(t *testing.T) {
	var h editHistory
	for i := range maxUndoPerFile + 5 {
		h.push("/a", editRecord{before: fmt.Sprint(i), after: fmt.Sprint(i + 1), existed: true})
	}
	n := 0
	for {
		r, ok := h.last("/a")
		if !ok {
			break
		}
		if want := fmt.Sprint(maxUndoPerFile + 4 - n); r.before != want {
			t.Fatalf("undo %d restores %q, want %q", n, r.before, want)
		}
		h.pop("/a")
		n++
	}
	if n != maxUndoPerFile {
		t.Errorf("%d edits kept, want %d", n, maxUndoPerFile)
	}
	for i := range maxUndoFiles + 3 {
		h.push(fmt.Sprintf("/f%d", i), editRecord{before: "a", after: "b", existed: true})
	}
	if len(h.files) != maxUndoFiles || len(h.order) != maxUndoFiles {
		t.Errorf("%d files kept, want %d", len(h.files), maxUndoFiles)
	}
	if _, ok := h.last("/f0"); ok {
		t.Error("the least recently edited file was kept")
	}
	big := strings.Repeat("x", maxUndoBytes/2)
	h.push("/big1", editRecord{before: big, after: big + "y", existed: true})
	if h.bytes > maxUndoBytes {
		t.Errorf("history holds %d bytes, more than %d", h.bytes, maxUndoBytes)
	}
	if _, ok := h.last("/f1"); ok {
		t.Error("older files were not evicted for the bytes bound")
	}
	h.push("/huge", editRecord{before: big + big, after: "z", existed: true})
	if _, ok := h.last("/huge"); ok {
		t.Error("a change larger than the whole bound was kept")
	}
}

func TestTextEditorDescribe(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, nil)
	for _, tt := range []struct {
		args          map[string]any
		reads, writes int
		risk          tools.Risk
	}{
		{map[string]any{"command": "view", "path": "a"}, 1, 0, tools.RiskLow},
		{map[string]any{"command": "create", "path": "a", "file_text": ""}, 0, 1, 0},
		{map[string]any{"command": "str_replace", "path": "a", "old_str": "x"}, 1, 1, 0},
		{map[string]any{"command": "insert", "path": "a", "insert_line": 0, "insert_text": "x"}, 1, 1, 0},
		{map[string]any{"command": "undo_edit", "path": "a"}, 1, 1, 0},
	} {
		e := f.Describe(&tools.Call{Tool: ToolName, Operation: textEditorName, Args: tt.args})
		if len(e.Reads) != tt.reads || len(e.Writes) != tt.writes || e.Risk != tt.risk {
			t.Errorf("%v: effect %+v", tt.args, e)
		}
	}
}

func TestTextEditorPreview(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"f.txt": "a\nb\n"})
	before := snapshot(t, dir)
	preview := func(args map[string]any) (string, error) {
		b, _ := json.Marshal(args)
		a, _ := tools.DecodeArguments(string(b))
		return f.Preview(context.Background(), &tools.Call{Tool: ToolName, Operation: textEditorName, Args: a})
	}
	got, err := preview(map[string]any{"command": "str_replace", "path": "f.txt", "old_str": "b", "new_str": "B"})
	if err != nil || !strings.Contains(got, "-b\n+B") {
		t.Errorf("preview = %q, %v", got, err)
	}
	got, err = preview(map[string]any{"command": "create", "path": "n/new.txt", "file_text": "new\n"})
	if err != nil || !strings.Contains(got, "--- /dev/null") || !strings.Contains(got, "+new") {
		t.Errorf("preview = %q, %v", got, err)
	}
	if got, err = preview(map[string]any{"command": "view", "path": "f.txt"}); got != "" || err != nil {
		t.Errorf("preview of view = %q, %v", got, err)
	}
	_, err = preview(map[string]any{"command": "str_replace", "path": "f.txt", "old_str": "zzz", "new_str": "B"})
	wantErr(t, err, errdefs.ErrFailed, "did not appear verbatim in f.txt")
	if after := snapshot(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Error("a preview changed the workspace")
	}
}

// TestTextEditorConcurrent: edits of one file at the same time wait for
// each other; none is lost.
func TestTextEditorConcurrent(t *testing.T) {
	const n = 30
	var content strings.Builder
	for i := range n {
		fmt.Fprintf(&content, "line %d\n", i)
	}
	f, dir := newTool(t, tools.Limits{}, map[string]string{"f.txt": content.String()})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			b, _ := json.Marshal(map[string]any{"command": "str_replace", "path": "f.txt",
				"old_str": fmt.Sprintf("line %d\n", i), "new_str": fmt.Sprintf("LINE %d\n", i)})
			a, _ := tools.DecodeArguments(string(b))
			_, err := f.Run(context.Background(), &tools.Call{Tool: ToolName, Operation: textEditorName, Args: a}, nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
	if got := strings.Count(string(b), "LINE "); got != n {
		t.Errorf("%d of %d edits are in the file:\n%s", got, n, b)
	}
}
