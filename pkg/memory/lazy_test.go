package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toold/toold/pkg/memory"
)

// A lazy backend opens on first use, retries a failed open, and fails
// after Close.
func TestLazy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	var opens atomic.Int32
	down := errors.New("database is down")
	b := memory.Lazy(func(ctx context.Context) (memory.Backend, error) {
		if opens.Add(1) == 1 {
			return nil, down
		}
		return memory.OpenSQLite(ctx, path)
	})
	s := memory.New(memory.Config{Backend: b})
	if opens.Load() != 0 {
		t.Fatal("opened before use")
	}
	if _, err := s.Put(ctx, alice, "first", nil, ""); err == nil {
		t.Fatal("put while the database is down succeeded")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Put(ctx, alice, "second", nil, "")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never recovered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := opens.Load(); n != 2 {
		t.Fatalf("%d opens, want 2", n)
	}
	if hs := search(t, s, bob, "second", memory.Filter{}); len(hs) != 1 {
		t.Fatalf("search: %v", hs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, alice, "third", nil, ""); err == nil {
		t.Fatal("put after close succeeded")
	}
	// Never used: Close opens nothing.
	var never atomic.Int32
	s2 := memory.New(memory.Config{Backend: memory.Lazy(func(context.Context) (memory.Backend, error) { never.Add(1); return nil, down })})
	if err := s2.Close(); err != nil || never.Load() != 0 {
		t.Fatalf("close of an unused lazy backend: %v, %d opens", err, never.Load())
	}
}
