package fileops

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/workspace"
)

// Changes of one path within a window merge into one.
func TestWatchCoalesces(t *testing.T) {
	tests := []struct {
		name  string
		kinds []ChangeKind
		want  ChangeKind // 0: nothing reported
	}{
		{"created then changed", []ChangeKind{Created, Changed, Changed}, Created},
		{"created then removed", []ChangeKind{Created, Changed, Removed}, 0},
		{"removed then created", []ChangeKind{Removed, Created}, Changed},
		{"changed then removed", []ChangeKind{Changed, Removed}, Removed},
		{"changed twice", []ChangeKind{Changed, Changed}, Changed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &watcher{opt: WatchOptions{}.withDefaults(), pending: map[string]*pendingChange{}, wake: make(chan struct{}, 1)}
			w.noteLocked(Change{Path: "first", Kind: Created})
			for _, k := range tt.kinds {
				w.noteLocked(Change{Path: "p", Kind: k})
			}
			ev, _ := w.flush()
			var got ChangeKind
			for _, c := range ev.Changes {
				if c.Path == "p" {
					got = c.Kind
				}
			}
			if got != tt.want || ev.Changes[0].Path != "first" {
				t.Fatalf("got %v, want %v (changes %v)", got, tt.want, ev.Changes)
			}
		})
	}
	// Past MaxPending paths a window drops changes and says so.
	w := &watcher{opt: WatchOptions{MaxPending: 2}.withDefaults(), pending: map[string]*pendingChange{}, wake: make(chan struct{}, 1)}
	for _, p := range []string{"a", "b", "c", "d"} {
		w.noteLocked(Change{Path: p, Kind: Created})
	}
	if ev, _ := w.flush(); len(ev.Changes) != 2 || !strings.Contains(ev.Notice, "changes of 2 more paths") {
		t.Fatalf("%+v", ev)
	}
}

// The cap on directories is applied and reported; the watch ends when ctx
// does, and when its directory is removed (with a notice).
func TestWatchCapAndEnd(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a/b/c", "d", "e"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	evs := make(chan WatchEvent, 16)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, ws, "a", WatchOptions{Recursive: true, MaxDirs: 2, Window: 10 * time.Millisecond}, func(ev WatchEvent) error {
			evs <- ev
			return nil
		})
	}()
	start := <-evs
	if !start.Started || start.Dirs != 2 || !strings.Contains(start.Notice, "only 2 directories are watched") {
		t.Fatalf("start: %+v", start)
	}
	if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	var last WatchEvent
	for ev := range evs {
		last = ev
		if strings.Contains(ev.Notice, "the watch ends") {
			break
		}
	}
	if err := <-done; err != nil || !strings.Contains(last.Notice, "a was removed") {
		t.Fatalf("end: %v %+v", err, last)
	}
	// Watching a file is refused.
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	if err := Watch(ctx, ws, "f", WatchOptions{}, func(WatchEvent) error { return nil }); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("watch a file: %v", err)
	}
}
