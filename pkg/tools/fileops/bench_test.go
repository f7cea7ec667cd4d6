package fileops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// reportCPU reports the process's CPU time (user and system) per
// iteration, from the call to the call of the function it returns: on a
// machine shared with other work, a steadier figure than ns/op, which
// counts the time the benchmark waited for a processor.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() {
		b.ReportMetric(float64(cpu()-start)/float64(b.N)/1e3, "cpu-µs/op")
	}
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

// BenchmarkReadFileSmall is read_file of a 4 KB text file, the tool alone.
func BenchmarkReadFileSmall(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := 0; sb.Len() < 4096; i++ {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "small.txt"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	f := New(ws, tools.Limits{}, Options{})
	call := &tools.Call{Tool: "file_operations", Operation: "read_file", Args: map[string]any{"path": "small.txt"}}
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := f.Run(context.Background(), call, &tools.Sink{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyPatch applies, and reverts, a three-hunk patch to a file of
// 10,000 lines: parse, seek, plan, two atomic writes per iteration.
// BenchmarkApplyPatchFuzzy does the same where every hunk is only found
// after the exact pass (trailing whitespace in the file).
func BenchmarkApplyPatch(b *testing.B)      { benchPatch(b, "") }
func BenchmarkApplyPatchFuzzy(b *testing.B) { benchPatch(b, " ") }

func benchPatch(b *testing.B, trail string) {
	var content strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&content, "line %d of the file%s\n", i, trail)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(content.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	f := New(ws, tools.Limits{}, Options{})
	patch := func(from, to string) map[string]any {
		var p strings.Builder
		p.WriteString("*** Begin Patch\n*** Update File: big.txt\n")
		for _, n := range []int{100, 5000, 9900} {
			fmt.Fprintf(&p, "@@\n line %d of the file\n-line %d %s\n+line %d %s\n line %d of the file\n", n-1, n, from, n, to, n+1)
		}
		p.WriteString("*** End Patch")
		return map[string]any{"input": p.String()}
	}
	forward, back := patch("of the file", "changed"), patch("changed", "of the file")
	for b.Loop() {
		for _, args := range []map[string]any{forward, back} {
			if _, err := f.Run(context.Background(), &tools.Call{Tool: ToolName, Operation: "apply_patch", Args: args}, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkTextEditorStrReplace is str_replace, and back, in the same file.
func BenchmarkTextEditorStrReplace(b *testing.B) {
	var content strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&content, "line %d of the file\n", i)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(content.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	f := New(ws, tools.Limits{}, Options{})
	args := func(from, to string) map[string]any {
		return map[string]any{"command": "str_replace", "path": "big.txt", "old_str": from, "new_str": to}
	}
	forward, back := args("line 5000 of the file\n", "line 5000 changed\n"), args("line 5000 changed\n", "line 5000 of the file\n")
	for b.Loop() {
		for _, a := range []map[string]any{forward, back} {
			if _, err := f.Run(context.Background(), &tools.Call{Tool: ToolName, Operation: textEditorName, Args: a}, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkWriteFileGitNamed writes a 4 KB file with and without the
// tools.GitNamed check of 8 named paths (a func-field port: the stats of
// the check, not the terminal manager's caches).
func BenchmarkWriteFileGitNamed(b *testing.B) {
	for _, named := range []bool{false, true} {
		b.Run(fmt.Sprintf("named=%v", named), func(b *testing.B) {
			dir := b.TempDir()
			ws, err := workspace.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			var opts Options
			if named {
				var paths []string
				for i := range 8 {
					p := filepath.Join(dir, "scripts", fmt.Sprintf("s%d.sh", i))
					os.MkdirAll(filepath.Dir(p), 0o755)
					os.WriteFile(p, []byte("x"), 0o644)
					paths = append(paths, p)
				}
				opts.GitNamed = gitNamedFunc(func() []string { return paths })
			}
			f := New(ws, tools.Limits{}, opts)
			body := strings.Repeat("x", 4096)
			call := &tools.Call{Tool: "file_operations", Operation: "write_file", Args: map[string]any{"path": "src/out.txt", "content": body}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Run(context.Background(), call, &tools.Sink{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
