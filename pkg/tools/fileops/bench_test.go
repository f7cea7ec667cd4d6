package fileops

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// Benchmarks over GOROOT/src (about 11k files, 130 MB), the tree the
// performance targets are set on: grep_search against ripgrep (rg) and glob
// against fd, run with the same settings. Compare with, for example:
//
//	hyperfine -w 3 "rg -n 'func main' $(go env GOROOT)/src"
//	go test -run '^$' -bench 'Grep|Glob' ./pkg/tools/fileops/

// goSrc opens GOROOT/src as a workspace, or skips b.
func goSrc(b *testing.B) *FileOperations {
	b.Helper()
	root := runtime.GOROOT() // deprecated, but enough to find a tree to search
	if root == "" {
		if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
			root = strings.TrimSpace(string(out))
		}
	}
	dir := filepath.Join(root, "src")
	if _, err := os.Stat(filepath.Join(dir, "runtime")); err != nil {
		b.Skipf("GOROOT/src not found at %s", dir)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	return New(ws, tools.Limits{}, Options{})
}

func benchCall(b *testing.B, f *FileOperations, op string, args map[string]any) {
	b.Helper()
	call := &tools.Call{Tool: ToolName, Operation: op, Args: args}
	var res *tools.Result
	for b.Loop() {
		var err error
		res, err = f.Run(context.Background(), call, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	if n, ok := res.Structured["total_matches"]; ok {
		b.ReportMetric(float64(n.(int)), "hits")
	} else if n, ok := res.Structured["total"]; ok {
		b.ReportMetric(float64(n.(int)), "hits")
	}
}

// BenchmarkGrepLiteral is `rg -n 'func main'`.
func BenchmarkGrepLiteral(b *testing.B) {
	benchCall(b, goSrc(b), "grep_search", map[string]any{"pattern": "func main"})
}

// BenchmarkGrepRegex is `rg -n 'func \w+\(ctx context'`.
func BenchmarkGrepRegex(b *testing.B) {
	benchCall(b, goSrc(b), "grep_search", map[string]any{"pattern": `func \w+\(ctx context`})
}

// BenchmarkGrepIgnoreCase is `rg -n -i 'http.request'`.
func BenchmarkGrepIgnoreCase(b *testing.B) {
	benchCall(b, goSrc(b), "grep_search", map[string]any{"pattern": `http.request`, "ignore_case": true})
}

// BenchmarkGrepNoLiteral is `rg -n '[A-Z][a-z]+[0-9]{3}'`: no literal to
// prefilter on, so the regexp runs over everything.
func BenchmarkGrepNoLiteral(b *testing.B) {
	benchCall(b, goSrc(b), "grep_search", map[string]any{"pattern": `[A-Z][a-z]+[0-9]{3}`})
}

// BenchmarkGrepInclude is `rg -n -g '*.s' 'TEXT'`.
func BenchmarkGrepInclude(b *testing.B) {
	benchCall(b, goSrc(b), "grep_search", map[string]any{"pattern": "TEXT", "include": "*.s"})
}

// BenchmarkGlob is `fd -g '**/*_test.go'`.
func BenchmarkGlob(b *testing.B) {
	benchCall(b, goSrc(b), "glob", map[string]any{"pattern": "**/*_test.go"})
}

// BenchmarkListDirDeep lists GOROOT/src to depth 10.
func BenchmarkListDirDeep(b *testing.B) {
	benchCall(b, goSrc(b), "list_dir", map[string]any{"depth": 10})
}
