package fileops

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/toold/toold/pkg/tools"
)

// A journal left by a toold killed mid-patch is rolled back: written and
// deleted files get their before-images (mode included), created files and
// the directories made for them go, and a file someone changed since is
// left alone. The journal is removed; a journal of another workspace is
// not touched.
func TestRecoverJournals(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"a.txt": "a1", "b.txt": "person", "new/x/n.txt": "n"})
	jdir := t.TempDir()
	j := journal{Workspace: f.ws.Dir(), MadeDirs: []string{"new", "new/x"}, Files: []journalEntry{
		{Path: "a.txt", Existed: true, Mode: 0o750, Before: []byte("a0"), After: sha256Hex([]byte("a1"))},
		{Path: "b.txt", Existed: true, Mode: 0o644, Before: []byte("b0"), After: sha256Hex([]byte("b1"))},
		{Path: "del.txt", Existed: true, Mode: 0o600, Before: []byte("d0")},
		{Path: "new/x/n.txt", After: sha256Hex([]byte("n"))},
	}}
	other := journal{Workspace: "/elsewhere", Files: []journalEntry{{Path: "a.txt", Existed: true, Before: []byte("zz")}}}
	for name, jj := range map[string]journal{"patch-1.journal": j, "patch-2.journal": other} {
		b, _ := json.Marshal(jj)
		if err := os.WriteFile(filepath.Join(jdir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := RecoverJournals(f.ws, jdir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if st != (JournalStats{Journals: 1, Restored: 2, Removed: 1, Left: 1}) {
		t.Fatalf("stats %+v", st)
	}
	for p, want := range map[string]string{"a.txt": "a0", "b.txt": "person", "del.txt": "d0"} {
		if b, _ := os.ReadFile(filepath.Join(dir, p)); string(b) != want {
			t.Errorf("%s = %q, want %q", p, b, want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a.txt")); fi == nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("a.txt mode: %v", fi)
	}
	if _, err := os.Lstat(filepath.Join(dir, "new")); err == nil {
		t.Error("the directories the patch made are still there")
	}
	if _, err := os.Stat(filepath.Join(jdir, "patch-1.journal")); err == nil {
		t.Error("the journal was not removed")
	}
	if _, err := os.Stat(filepath.Join(jdir, "patch-2.journal")); err != nil {
		t.Error("another workspace's journal was removed")
	}
}

// A patch that completes leaves no journal behind.
func TestPatchJournalRemoved(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"a.txt": "one\n"})
	f.journalDir = t.TempDir()
	args, _ := json.Marshal(map[string]string{"input": "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** Add File: b/c.txt\n+c\n*** End Patch"})
	if _, err := run(t, f, "apply_patch", string(args)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "two\n" {
		t.Fatalf("a.txt = %q", b)
	}
	if ents, _ := os.ReadDir(f.journalDir); len(ents) != 0 {
		t.Fatalf("journals left: %v", ents)
	}
}
