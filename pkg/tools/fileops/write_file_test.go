package fileops

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// runOutside runs op with args (JSON) as a call that policy allowed to
// touch the paths outside.
func runOutside(t *testing.T, f *FileOperations, op, args string, outside ...string) (*tools.Result, error) {
	t.Helper()
	a, err := tools.DecodeArguments(args)
	if err != nil {
		t.Fatalf("bad test arguments %s: %v", args, err)
	}
	return f.Run(context.Background(), &tools.Call{ID: "c1", Tool: ToolName, Operation: op, Args: a, Outside: outside}, nil)
}

// jsonArgs renders arguments as JSON.
func jsonArgs(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshot records a directory tree: path -> content, "->target" for a
// symlink, "/" for a directory, and the mode of each.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode := fmt.Sprintf(" [%v]", fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			snap[rel] = "->" + target + mode
		case fi.IsDir():
			snap[rel] = "/" + mode
		case !fi.Mode().IsRegular():
			snap[rel] = "special" + mode
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if len(b) > 64<<10 {
				b = fmt.Appendf(nil, "sha256:%x", sha256.Sum256(b))
			}
			snap[rel] = string(b) + mode
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// sameSnapshot fails the test when dir differs from before.
func sameSnapshot(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := snapshot(t, dir)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: %q -> %q", k, v, after[k])
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared: %q", k, v)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func modeOf(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// noTemps fails the test when a temporary file of a write is left in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".toold-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		path     string
		content  string
		wantFile string // file to check, relative; defaults to path
		wantText []string
		created  bool
	}{
		{name: "new file", path: "a.txt", content: "hello\n", wantText: []string{"Created a.txt (1 line, 6 B)."}, created: true},
		{name: "replace", files: map[string]string{"a.txt": "one\ntwo\n"}, path: "a.txt", content: "one\nthree\nfour\n",
			wantText: []string{"Wrote a.txt (3 lines, 15 B): 2 lines added, 1 line removed"}},
		{name: "unchanged", files: map[string]string{"a.txt": "same\n"}, path: "a.txt", content: "same\n",
			wantText: []string{"the content is unchanged"}},
		{name: "parents created", path: "x/y/z.go", content: "package z\n", created: true,
			wantText: []string{"Created x/y/z.go", "Created the missing parent directories x, x/y."}},
		{name: "one parent created", files: map[string]string{"x/": ""}, path: "x/y/z.go", content: "package z\n", created: true,
			wantText: []string{"Created the missing parent directory x/y."}},
		{name: "empty content", path: "empty", content: "", created: true, wantText: []string{"Created empty (0 lines, 0 B)."}},
		{name: "exact bytes, CRLF and no final newline", path: "w.bat", content: "a\r\nb\r\nc", created: true},
		{name: "through a symlink inside", files: map[string]string{"real.txt": "old\n", "link.txt": "->real.txt"},
			path: "link.txt", content: "new\n", wantFile: "real.txt", wantText: []string{"Wrote real.txt"}},
		{name: "dangling symlink creates its target", files: map[string]string{"dl": "->sub/target.txt"},
			path: "dl", content: "t\n", wantFile: "sub/target.txt", created: true},
		{name: "absolute path inside", files: map[string]string{"a.txt": "x"}, path: "ABS/a.txt", content: "y", wantFile: "a.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, tt.files)
			p := strings.Replace(tt.path, "ABS", f.ws.Dir(), 1)
			res, err := run(t, f, "write_file", jsonArgs(t, map[string]any{"path": p, "content": tt.content}))
			if err != nil {
				t.Fatal(err)
			}
			want := tt.wantFile
			if want == "" {
				want = tt.path
			}
			if got := readFile(t, filepath.Join(dir, want)); got != tt.content {
				t.Errorf("content = %q, want %q", got, tt.content)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(res.Text, w) {
					t.Errorf("text %q does not contain %q", res.Text, w)
				}
			}
			if res.Structured["created"] != tt.created {
				t.Errorf("created = %v, want %v", res.Structured["created"], tt.created)
			}
			if res.Structured["bytes"] != len(tt.content) {
				t.Errorf("bytes = %v", res.Structured["bytes"])
			}
			if tt.files["link.txt"] != "" {
				if fi, err := os.Lstat(filepath.Join(dir, "link.txt")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Error("the symlink was replaced")
				}
			}
			noTemps(t, dir)
		})
	}
}

func TestWriteFileKeepsMode(t *testing.T) {
	for _, mode := range []fs.FileMode{0o600, 0o755, 0o640, 0o444} {
		t.Run(mode.String(), func(t *testing.T) {
			f, dir := newTool(t, tools.Limits{}, map[string]string{"f": "old\n"})
			p := filepath.Join(dir, "f")
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			res := mustRun(t, f, "write_file", `{"path":"f","content":"new\n"}`)
			if got := modeOf(t, p).Perm(); got != mode {
				t.Errorf("mode = %v, want %v", got, mode)
			}
			if res.Structured["mode"] != fmt.Sprintf("%04o", uint32(mode)) {
				t.Errorf("structured mode = %v", res.Structured["mode"])
			}
			mustRun(t, f, "edit_file", `{"path":"f","old_string":"new","new_string":"newer"}`)
			if got := modeOf(t, p).Perm(); got != mode {
				t.Errorf("mode after edit = %v, want %v", got, mode)
			}
		})
	}
	t.Run("new file 0644", func(t *testing.T) {
		f, dir := newTool(t, tools.Limits{}, nil)
		mustRun(t, f, "write_file", `{"path":"d/n","content":"x"}`)
		// 0644 less the umask: never more than that.
		if got := modeOf(t, filepath.Join(dir, "d/n")).Perm(); got&^0o644 != 0 || got&0o600 != 0o600 {
			t.Errorf("mode = %v, want 0644 less the umask", got)
		}
		if got := modeOf(t, filepath.Join(dir, "d")).Perm(); got&^0o755 != 0 || got&0o700 != 0o700 {
			t.Errorf("parent mode = %v, want 0755 less the umask", got)
		}
	})
}

func TestWriteFileHardLink(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"a": "old\n"})
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, f, "write_file", `{"path":"a","content":"new\n"}`)
	if !strings.Contains(res.Text, "2 hard links") || res.Structured["hard_links_broken"] != 1 {
		t.Errorf("no note about the hard link: %q %v", res.Text, res.Structured)
	}
	if readFile(t, filepath.Join(dir, "b")) != "old\n" || readFile(t, filepath.Join(dir, "a")) != "new\n" {
		t.Error("unexpected contents")
	}
}

func TestWriteFileErrors(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{
		"dir/":    "",
		"file":    "x",
		"fifo":    "",
		"symdir":  "->dir",
		"sub/a.b": "x",
	})
	os.Remove(filepath.Join(dir, "fifo"))
	if err := mkfifo(filepath.Join(dir, "fifo")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		op, args string
		class    error
		parts    []string
	}{
		{"write_file", `{"path":"dir","content":"x"}`, errdefs.ErrFailed, []string{`"dir" is a directory`}},
		{"write_file", `{"path":"symdir","content":"x"}`, errdefs.ErrFailed, []string{"is a directory"}},
		{"write_file", `{"path":"file/x","content":"x"}`, errdefs.ErrFailed, []string{"not a directory"}},
		{"write_file", `{"path":"fifo","content":"x"}`, errdefs.ErrFailed, []string{"fifo is not a regular file"}},
		{"write_file", `{"path":".","content":"x"}`, errdefs.ErrFailed, []string{"workspace root"}},
		{"write_file", `{"path":"","content":"x"}`, errdefs.ErrInvalidArgument, []string{"path is required"}},
		{"write_file", `{"path":"newdir/","content":"x"}`, errdefs.ErrInvalidArgument, []string{"ends with /"}},
		{"edit_file", `{"path":"dir/","old_string":"","new_string":"x"}`, errdefs.ErrInvalidArgument, []string{"ends with /"}},
		{"write_file", `{"path":"a"}`, errdefs.ErrInvalidArgument, []string{"content is required"}},
		{"create_file", `{"path":"file","content":"y"}`, errdefs.ErrFailed, []string{"file already exists", "never overwrites", "edit_file"}},
		{"create_file", `{"path":"dir","content":"y"}`, errdefs.ErrFailed, []string{"already exists"}},
		{"create_file", `{"path":"sub/a.b","content":"y"}`, errdefs.ErrFailed, []string{"sub/a.b already exists"}},
	}
	for _, tt := range tests {
		t.Run(tt.op+tt.args, func(t *testing.T) {
			before := snapshot(t, dir)
			_, err := run(t, f, tt.op, tt.args)
			wantErr(t, err, tt.class, tt.parts...)
			sameSnapshot(t, dir, before)
		})
	}
}

func TestCreateFile(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, nil)
	res := mustRun(t, f, "create_file", `{"path":"new/x.go","content":"package x\n"}`)
	if readFile(t, filepath.Join(dir, "new/x.go")) != "package x\n" || res.Structured["created"] != true {
		t.Errorf("create_file: %q %v", res.Text, res.Structured)
	}
	if !strings.Contains(res.Text, "Created new/x.go") || !strings.Contains(res.Text, "parent directory new.") {
		t.Errorf("text = %q", res.Text)
	}
	_, err := run(t, f, "create_file", `{"path":"new/x.go","content":"other\n"}`)
	wantErr(t, err, errdefs.ErrFailed, "already exists")
	if readFile(t, filepath.Join(dir, "new/x.go")) != "package x\n" {
		t.Error("create_file overwrote the file")
	}
	noTemps(t, dir)
}

// TestCreateFileRace races creates of one file: exactly one wins, and the
// file holds the winner's content whole.
func TestCreateFileRace(t *testing.T) {
	for round := range 5 {
		f, dir := newTool(t, tools.Limits{}, nil)
		const n = 16
		var (
			wg     sync.WaitGroup
			wins   atomic.Int32
			winner atomic.Int32
		)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				content := strings.Repeat(fmt.Sprintf("writer %d\n", i), 1000)
				_, err := run(t, f, "create_file", jsonArgs(t, map[string]any{"path": "race.txt", "content": content}))
				if err == nil {
					wins.Add(1)
					winner.Store(int32(i))
				} else if !strings.Contains(err.Error(), "already exists") {
					t.Errorf("round %d: unexpected error %v", round, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d creates won, want exactly 1", round, wins.Load())
		}
		want := strings.Repeat(fmt.Sprintf("writer %d\n", winner.Load()), 1000)
		if readFile(t, filepath.Join(dir, "race.txt")) != want {
			t.Fatalf("round %d: the file is not the winner's content", round)
		}
		noTemps(t, dir)
	}
}

// TestCreateFileRaceExternal checks that create_file does not replace a
// file another process creates between its check and its write.
func TestCreateFileRaceExternal(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, nil)
	f.locks.held = func([]string) {
		os.WriteFile(filepath.Join(dir, "x"), []byte("theirs"), 0o644)
	}
	defer func() { f.locks.held = nil }()
	_, err := run(t, f, "create_file", `{"path":"x","content":"ours"}`)
	wantErr(t, err, errdefs.ErrFailed, "already exists")
	if readFile(t, filepath.Join(dir, "x")) != "theirs" {
		t.Error("create_file replaced a file created meanwhile")
	}
}

// TestWriteAtomic checks that readers never see a partial file while
// write_file replaces a large one over and over.
func TestWriteAtomic(t *testing.T) {
	const size = 512 << 10
	contents := [][]byte{bytes.Repeat([]byte("a"), size), bytes.Repeat([]byte("b"), size+1)}
	f, dir := newTool(t, tools.Limits{}, map[string]string{"big": string(contents[0])})
	p := filepath.Join(dir, "big")
	stop := make(chan struct{})
	var (
		wg    sync.WaitGroup
		reads atomic.Int64
	)
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := os.ReadFile(p)
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				if !bytes.Equal(b, contents[0]) && !bytes.Equal(b, contents[1]) {
					t.Errorf("a reader saw a partial file of %d bytes", len(b))
					return
				}
				reads.Add(1)
			}
		})
	}
	deadline := time.Now().Add(time.Second)
	for i := 0; i < 20 && time.Now().Before(deadline); i++ {
		mustRun(t, f, "write_file", jsonArgs(t, map[string]any{"path": "big", "content": string(contents[(i+1)%2])}))
	}
	close(stop)
	wg.Wait()
	if reads.Load() == 0 {
		t.Error("no reads happened")
	}
	noTemps(t, dir)
}

func TestDescribeWrites(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, nil)
	tests := []struct {
		op, args    string
		display     string
		reads       []string
		writes      []string
		previewable bool
	}{
		{"write_file", `{"path":"a.go","content":""}`, "Writing file: a.go", nil, []string{"a.go"}, true},
		{"create_file", `{"path":"b/c.go","content":""}`, "Creating file: b/c.go", nil, []string{"b/c.go"}, true},
		{"edit_file", `{"path":"a.go","old_string":"x","new_string":"y"}`, "Editing file: a.go", []string{"a.go"}, []string{"a.go"}, true},
		{"replace_string", `{"path":"a.go","old_string":"x","new_string":"y"}`, "Editing file: a.go", []string{"a.go"}, []string{"a.go"}, true},
		{"delete_path", `{"path":"old","recursive":true}`, "Deleting: old", nil, []string{"old"}, true},
		{"move_path", `{"source":"a","destination":"b/a"}`, "Moving: a → b/a", nil, []string{"a", "b/a"}, true},
		{"make_dir", `{"path":"d/e"}`, "Creating directory: d/e", nil, []string{"d/e"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			a, _ := tools.DecodeArguments(tt.args)
			e := f.Describe(&tools.Call{Tool: ToolName, Operation: tt.op, Args: a})
			if e.Display != tt.display {
				t.Errorf("Display = %q, want %q", e.Display, tt.display)
			}
			if strings.Join(e.Reads, ",") != strings.Join(tt.reads, ",") || strings.Join(e.Writes, ",") != strings.Join(tt.writes, ",") {
				t.Errorf("Reads, Writes = %q, %q; want %q, %q", e.Reads, e.Writes, tt.reads, tt.writes)
			}
		})
	}
}

func mkfifo(p string) error { return unix.Mkfifo(p, 0o644) }
