package fileops

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// BenchmarkNearbyPaths is the cost of the suggestions for a missing path
// in a workspace of 5000 files in 50 directories.
func BenchmarkNearbyPaths(b *testing.B) {
	dir := b.TempDir()
	for i := range 5000 {
		p := filepath.Join(dir, "pkg", fmt.Sprintf("m%02d", i%50), fmt.Sprintf("f%04d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	f := New(ws, tools.Limits{}, Options{})
	b.ReportAllocs()
	for b.Loop() {
		if got := f.nearbyPaths("f4999.go", 3); len(got) != 1 {
			b.Fatalf("suggestions %v", got)
		}
	}
}
