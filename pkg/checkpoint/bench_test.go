package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toold/toold/pkg/checkpoint"
)

// workspace10k makes a workspace of 10,000 small files in 500 directories.
func workspace10k(b *testing.B) string {
	ws := b.TempDir()
	for d := range 500 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%03d", d), "sub")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range 20 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", i)), []byte(fmt.Sprintf("package p%d\n// %d\n", d, i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return ws
}

// The cost of recording one call on a 10,000-file workspace: the call's
// window opened and closed, with nothing changed and with one file
// edited. Figures: docs/rewind.md.
func BenchmarkRecord10k(b *testing.B) {
	ws := workspace10k(b)
	t0 := time.Now()
	r, err := checkpoint.New(checkpoint.Config{Workspace: ws, StoreDir: filepath.Join(b.TempDir(), "store")})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if err := r.Ready(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Logf("first walk of %d paths: %v", r.Stats().Paths, time.Since(t0))
	ctx := context.Background()
	b.Run("noop", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			r.Begin(ctx, "c", fmt.Sprint(i), nil)()
		}
	})
	target := filepath.Join(ws, "pkg250", "sub", "f10.go")
	b.Run("edit", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			end := r.Begin(ctx, "c", fmt.Sprint(i), nil)
			if err := os.WriteFile(target, []byte(fmt.Sprintf("package x\n// edit %d\n", i)), 0o644); err != nil {
				b.Fatal(err)
			}
			end()
		}
	})
	b.Run("edit-unrecorded", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := os.WriteFile(target, []byte(fmt.Sprintf("package x\n// edit %d\n", i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}
