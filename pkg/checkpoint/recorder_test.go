package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/toold/toold/pkg/checkpoint"
	"github.com/toold/toold/pkg/checkpoint/checkpointtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newRecorder(t *testing.T, ws string, cfg checkpoint.Config) *checkpoint.Recorder {
	t.Helper()
	cfg.Workspace, cfg.StoreDir = ws, filepath.Join(t.TempDir(), "store")
	r, err := checkpoint.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// call runs fn inside the window of a call.
func call(r *checkpoint.Recorder, conv, id string, scope []string, fn func()) {
	end := r.Begin(context.Background(), conv, id, scope)
	fn()
	end()
}

// A conversation of commands and file edits — create, modify in place,
// append, delete, rename, chmod, a new directory tree, a symlink, a
// directory removed with its files — rewound to before its first call
// gives back the workspace byte for byte, modes included.
func TestRewindRestoresTree(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "alpha\n")
	write(t, filepath.Join(ws, "src/main.go"), "package main\n")
	write(t, filepath.Join(ws, "old/x.txt"), "x\n")
	write(t, filepath.Join(ws, "old/deep/y.txt"), "y\n")
	must(t, os.Symlink("a.txt", filepath.Join(ws, "link")))
	must(t, os.Chmod(filepath.Join(ws, "src/main.go"), 0o755))
	before := checkpointtest.TreeHash(t, ws)
	r := newRecorder(t, ws, checkpoint.Config{})

	call(r, "c1", "1", []string{"a.txt"}, func() { write(t, filepath.Join(ws, "a.txt"), "beta\n") })
	call(r, "c1", "2", nil, func() {
		f, err := os.OpenFile(filepath.Join(ws, "src/main.go"), os.O_WRONLY, 0)
		must(t, err)
		_, err = f.WriteAt([]byte("PACKAGE"), 0) // in place: same inode
		must(t, err)
		must(t, f.Close())
		write(t, filepath.Join(ws, "new/tree/deep/n.txt"), "new\n")
		must(t, os.Chmod(filepath.Join(ws, "a.txt"), 0o600))
		must(t, os.Rename(filepath.Join(ws, "src/main.go"), filepath.Join(ws, "src/renamed.go")))
		must(t, os.RemoveAll(filepath.Join(ws, "old")))
		must(t, os.Remove(filepath.Join(ws, "link")))
		must(t, os.Symlink("elsewhere", filepath.Join(ws, "link")))
	})
	call(r, "c1", "3", nil, func() {
		f, err := os.OpenFile(filepath.Join(ws, "a.txt"), os.O_APPEND|os.O_WRONLY, 0)
		must(t, err)
		_, err = f.WriteString("more\n")
		must(t, err)
		must(t, f.Close())
		must(t, os.Rename(filepath.Join(ws, "new"), filepath.Join(ws, "moved")))
	})
	calls, err := r.Calls(context.Background(), "c1", "")
	must(t, err)
	if len(calls) != 3 || len(calls[0].Changes) != 1 || calls[0].Changes[0].Path != "a.txt" {
		t.Fatalf("records: %+v", calls)
	}
	dry, err := r.Rewind(context.Background(), "c1", "1", checkpoint.RewindOptions{DryRun: true})
	must(t, err)
	if dry.Applied || dry.Conflicts() != 0 || strings.Join(dry.Calls, ",") != "3,2,1" {
		t.Fatalf("dry run: %+v", dry)
	}
	if checkpointtest.TreeHash(t, ws) == before {
		t.Fatal("the calls changed nothing?")
	}
	rep, err := r.Rewind(context.Background(), "c1", "1", checkpoint.RewindOptions{})
	must(t, err)
	if rep.Conflicts() != 0 {
		t.Fatalf("conflicts: %+v", rep.Actions)
	}
	if got := checkpointtest.TreeHash(t, ws); got != before {
		t.Fatalf("after the rewind the tree differs:\n%s\nwant\n%s", got, before)
	}
	if _, err := r.Calls(context.Background(), "c1", "1"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("a rewound call's record: %v", err)
	}
}

// A file changed outside the conversation after its call is a conflict:
// reported and left alone; the rest is rewound. Force overwrites it.
func TestRewindConflict(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "a0")
	write(t, filepath.Join(ws, "b.txt"), "b0")
	r := newRecorder(t, ws, checkpoint.Config{})
	call(r, "c1", "1", nil, func() {
		write(t, filepath.Join(ws, "a.txt"), "a1")
		write(t, filepath.Join(ws, "b.txt"), "b1")
	})
	// A person edits b.txt; another conversation edits a.txt.
	write(t, filepath.Join(ws, "b.txt"), "b-person")
	call(r, "other", "9", nil, func() { write(t, filepath.Join(ws, "c.txt"), "c") })
	rep, err := r.Rewind(context.Background(), "c1", "1", checkpoint.RewindOptions{})
	must(t, err)
	if rep.Conflicts() != 1 {
		t.Fatalf("conflicts: %+v", rep.Actions)
	}
	for _, a := range rep.Actions {
		if a.Path == "b.txt" && (a.Conflict == "" || a.Done) {
			t.Fatalf("b.txt: %+v", a)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "b.txt")); string(b) != "b-person" {
		t.Fatalf("b.txt overwritten: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "a0" {
		t.Fatalf("a.txt not rewound: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "c.txt")); err != nil {
		t.Fatal("another conversation's file was touched")
	}
	rep, err = r.Rewind(context.Background(), "c1", "1", checkpoint.RewindOptions{Force: true})
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(ws, "b.txt")); string(b) != "b0" || rep.Conflicts() != 0 {
		t.Fatalf("forced: b.txt %q, %+v", b, rep.Actions)
	}
}

// A file tool's call claims only the paths it writes; a change elsewhere
// during it belongs to no call.
func TestScopedCall(t *testing.T) {
	ws := t.TempDir()
	r := newRecorder(t, ws, checkpoint.Config{})
	call(r, "c", "1", []string{"dir/f.txt"}, func() {
		write(t, filepath.Join(ws, "dir/f.txt"), "f")
		write(t, filepath.Join(ws, "g.txt"), "g")
	})
	calls, err := r.Calls(context.Background(), "c", "1")
	must(t, err)
	var paths []string
	for _, ch := range calls[0].Changes {
		paths = append(paths, ch.Path)
	}
	if strings.Join(paths, ",") != "dir,dir/f.txt" { // the directory it made for the file too
		t.Fatalf("claimed %v", paths)
	}
	if !r.Stats().Watching {
		t.Fatal("changes are not watched (inotify)")
	}
}

// The store is bounded: beyond max_calls a conversation's oldest records
// go, and a rewind to one of them says it is gone.
func TestBounds(t *testing.T) {
	ws := t.TempDir()
	r := newRecorder(t, ws, checkpoint.Config{MaxCalls: 3, MaxBytes: 1 << 20})
	for i := range 5 {
		call(r, "c", fmt.Sprint(i), nil, func() { write(t, filepath.Join(ws, "f.txt"), strings.Repeat("x", i*100)) })
	}
	calls, _ := r.Calls(context.Background(), "c", "")
	if len(calls) != 3 || calls[0].CallID != "2" {
		t.Fatalf("kept %+v", calls)
	}
	if _, err := r.Rewind(context.Background(), "c", "0", checkpoint.RewindOptions{}); !errors.Is(err, checkpoint.ErrDropped) {
		t.Fatalf("rewind to a dropped call: %v", err)
	}
	// Bytes: 300 KiB contents per call, 1 MiB cap.
	for i := range 6 {
		call(r, "d", fmt.Sprint(i), nil, func() {
			write(t, filepath.Join(ws, "big.bin"), strings.Repeat(fmt.Sprint(i), 300<<10))
		})
	}
	if st := r.Stats(); st.Bytes > 1<<20 {
		t.Fatalf("store holds %d bytes over its bound", st.Bytes)
	}
	calls, _ = r.Calls(context.Background(), "d", "")
	if len(calls) == 0 || len(calls) == 6 {
		t.Fatalf("kept %d records of d", len(calls))
	}
	if _, err := r.Rewind(context.Background(), "d", calls[0].CallID, checkpoint.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A store inside the workspace (a state directory there) records nothing
// of itself.
func TestStoreInWorkspace(t *testing.T) {
	ws := t.TempDir()
	r, err := checkpoint.New(checkpoint.Config{Workspace: ws, StoreDir: filepath.Join(ws, ".state", "store")})
	must(t, err)
	defer r.Close()
	call(r, "c", "1", nil, func() { write(t, filepath.Join(ws, "a.txt"), "a") })
	calls, err := r.Calls(context.Background(), "c", "1")
	must(t, err)
	if len(calls[0].Changes) != 1 || calls[0].Changes[0].Path != "a.txt" {
		t.Fatalf("changes %+v", calls[0].Changes)
	}
}

// Records count against max_bytes too: calls whose changes hold no new
// contents (here a mode flipped back and forth), spread over many
// conversations so that max_calls never drops one, do not accumulate
// without bound.
func TestBoundsRecordsWithoutContents(t *testing.T) {
	ws := t.TempDir()
	f := filepath.Join(ws, "f.sh")
	write(t, f, "x")
	const maxBytes = 32 << 10
	r := newRecorder(t, ws, checkpoint.Config{MaxBytes: maxBytes})
	const n = 1000
	for i := range n {
		call(r, fmt.Sprint("c", i%50), fmt.Sprint(i), nil, func() { must(t, os.Chmod(f, os.FileMode(0o644|(i%2)*0o111))) })
	}
	st := r.Stats()
	// A record of one change to a kept file is a few hundred bytes.
	if st.Calls == 0 || st.Calls > maxBytes/200 {
		t.Fatalf("%d records kept of %d content-free calls under a %d-byte bound (contents %d bytes)", st.Calls, n, maxBytes, st.Bytes)
	}
	last := fmt.Sprint(n - 1)
	calls, err := r.Calls(context.Background(), fmt.Sprint("c", (n-1)%50), last)
	if err != nil || len(calls) != 1 || len(calls[0].Changes) != 1 {
		t.Fatalf("the newest record: %+v %v", calls, err)
	}
	if _, err := r.Calls(context.Background(), "c0", "0"); !errors.Is(err, checkpoint.ErrDropped) {
		t.Fatalf("the oldest record: %v, want ErrDropped", err)
	}
}
