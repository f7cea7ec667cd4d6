package tools_test

import (
	"testing"

	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/dialect"
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

// BenchmarkResolveWithDialects resolves as toold does, the five agents'
// dialects registered: every call without a chosen dialect is matched
// against their tools first (an MCP server's tool, toold's think, a Claude
// Code name).
func BenchmarkResolveWithDialects(b *testing.B) {
	r := testRegistry(&testing.T{})
	if err := r.RegisterDialect(dialect.All()...); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, args string }{
		{"everything__echo", `{"message":"ping"}`},
		{"think", `{"thought":"x"}`},
		{"Read", `{"file_path":"/a"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				args, _ := tools.DecodeArguments(c.args)
				_, _ = r.ResolveCall("conv", "", c.name, args)
			}
		})
	}
}
