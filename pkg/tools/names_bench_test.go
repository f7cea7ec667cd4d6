package tools_test

import (
	"testing"

	"github.com/toold/toold/pkg/tools"
)

// BenchmarkResolve compares an exact name with the spellings that need
// the variant search (a prefix, another agent's verb) and a miss.
func BenchmarkResolve(b *testing.B) {
	r := testRegistry(&testing.T{})
	for _, name := range []string{"read_file", "functions.read_file", "File_Operations.ReadFile", "cat", "launch_rockets"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = r.Resolve(name, map[string]any{"path": "a"})
			}
		})
	}
}

// BenchmarkDecodeArguments compares clean JSON with the repaired forms.
func BenchmarkDecodeArguments(b *testing.B) {
	for name, text := range map[string]string{
		"json":           `{"path": "main.go", "limit": 5}`,
		"double-encoded": `"{\"path\": \"main.go\", \"limit\": 5}"`,
		"python":         `{'path': 'main.go', 'limit': 5, 'all': True}`,
		"fence":          "```json\n{\"path\": \"main.go\"}\n```",
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tools.DecodeArguments(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
