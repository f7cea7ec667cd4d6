package textcalls_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toold/toold/pkg/textcalls"
)

// BenchmarkParseAuto parses every transcript with format detection.
func BenchmarkParseAuto(b *testing.B) {
	files, _ := filepath.Glob("testdata/transcripts/*.txt")
	var texts []string
	for _, f := range files {
		t, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		texts = append(texts, string(t))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range texts {
			if _, err := textcalls.Parse(t, textcalls.Auto); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(texts)), "ns/transcript")
}
