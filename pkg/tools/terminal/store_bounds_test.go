package terminal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/tools"
)

func outFiles(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.out"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// Kept output is bounded by count and age, not only by bytes, and a
// forgotten conversation leaves nothing.
func TestStoreBounds(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		dir := t.TempDir()
		s, err := newStore(dir, 1000, 1<<20, 100)
		if err != nil {
			t.Fatal(err)
		}
		s.maxRecords = 3
		for i := range 10 {
			r := s.create("c", string(rune('a'+i)), "echo")
			r.write(tools.Stdout, []byte("output\n"))
			r.finish("exit code 0")
			if n := outFiles(t, dir); n > 3 {
				t.Fatalf("%d files after %d commands, want at most 3", n, i+1)
			}
		}
		if _, err := s.lookup("c", "a"); err == nil || !strings.Contains(err.Error(), "to keep at most 3 outputs") {
			t.Fatalf("lookup of an evicted output: %v", err)
		}
		if r, err := s.lookup("c", "j"); err != nil || string(r.read(0, 100).data) != "output\n" {
			t.Fatalf("lookup of the newest: %v", err)
		}
	})
	t.Run("age", func(t *testing.T) {
		dir := t.TempDir()
		s, err := newStore(dir, 1000, 1<<20, 100)
		if err != nil {
			t.Fatal(err)
		}
		s.maxAge = time.Minute
		now := time.Now()
		s.clock = func() time.Time { return now }
		old := s.create("c", "old", "echo")
		old.write(tools.Stdout, []byte("old\n"))
		old.finish("exit code 0")
		// The first ended two minutes ago.
		now = now.Add(2 * time.Minute)
		fresh := s.create("c", "fresh", "echo")
		fresh.write(tools.Stdout, []byte("fresh\n"))
		fresh.finish("exit code 0")
		if _, err := s.lookup("c", "old"); err == nil || !strings.Contains(err.Error(), "kept for 1m0s") {
			t.Fatalf("lookup of an expired output: %v", err)
		}
		if _, err := os.Stat(old.path); !os.IsNotExist(err) {
			t.Fatalf("the expired output's file is still there: %v", err)
		}
		if _, err := s.lookup("c", "fresh"); err != nil {
			t.Fatal(err)
		}
	})
	// The count bound evicted the oldest; the age bound still finds the
	// next oldest, and only it.
	t.Run("age after count", func(t *testing.T) {
		s, err := newStore(t.TempDir(), 1000, 1<<20, 100)
		if err != nil {
			t.Fatal(err)
		}
		s.maxRecords, s.maxAge = 2, time.Minute
		t0 := time.Now()
		now := t0
		s.clock = func() time.Time { return now }
		for i, id := range []string{"a", "b", "c"} {
			now = t0.Add(time.Duration(i) * time.Second)
			r := s.create("c", id, "echo")
			r.write(tools.Stdout, []byte(id+"\n"))
			r.finish("exit code 0")
		}
		wantGone := func(id, why string) {
			t.Helper()
			if _, err := s.lookup("c", id); err == nil || !strings.Contains(err.Error(), why) {
				t.Fatalf("lookup of %s: %v, want %q", id, err, why)
			}
		}
		wantGone("a", "at most 2 outputs")
		now = t0.Add(61500 * time.Millisecond)
		wantGone("b", "kept for 1m0s")
		if _, err := s.lookup("c", "c"); err != nil {
			t.Fatalf("c ended 59.5 s ago: %v", err)
		}
		now = t0.Add(62500 * time.Millisecond)
		wantGone("c", "kept for 1m0s")
	})
	t.Run("forgotten conversation", func(t *testing.T) {
		dir := t.TempDir()
		s, err := newStore(dir, 1000, 1<<20, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, conv := range []string{"a", "b"} {
			r := s.create(conv, "x", "echo")
			r.write(tools.Stdout, []byte(conv+"\n"))
			r.finish("exit code 0")
		}
		if !s.holds("a") || !s.holds("b") {
			t.Fatal("holds")
		}
		s.dropConversation("a")
		if s.holds("a") || !s.holds("b") || outFiles(t, dir) != 1 {
			t.Fatalf("after dropping a: holds(a) %v, holds(b) %v, %d files", s.holds("a"), s.holds("b"), outFiles(t, dir))
		}
		if _, err := s.lookup("a", "x"); err == nil || strings.Contains(err.Error(), "evicted") {
			t.Fatalf("lookup in a forgotten conversation: %v", err)
		}
	})
}
