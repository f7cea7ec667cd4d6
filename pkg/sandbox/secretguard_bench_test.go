package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
)

// BenchmarkSecretGuardWindow measures the window of the secret guard: from
// a process outside writing a new secret (create, write, close) to the
// guard's mark on it — a command that reads the file inside that window
// reads it.
func BenchmarkSecretGuardWindow(b *testing.B) {
	dir := b.TempDir()
	netns, err := sandbox.OpenNetns("")
	if err != nil {
		b.Skip(err)
	}
	defer netns.Close()
	marked := make(chan time.Time, 1)
	g, err := sandbox.OpenSecretGuard(sandbox.SecretGuardConfig{Roots: []string{dir}, Sensitive: secretNames, Netns: netns.File(),
		OnMark: func(_ string, at time.Time) { marked <- at }})
	if err != nil {
		b.Skip(err)
	}
	defer g.Close()
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		p := filepath.Join(dir, ".env"+strconv.Itoa(i))
		start := time.Now()
		if err := os.WriteFile(p, []byte("S"), 0o600); err != nil {
			b.Fatal(err)
		}
		total += (<-marked).Sub(start)
		os.Remove(p)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns-to-mark/op")
}

// BenchmarkSecretGuardHostCreate measures what the guard's filesystem mark
// costs processes outside the sandbox: creating, closing and removing a
// harmless file, with and without a guard watching the file system, and
// the guard's own CPU per event (toold's cost).
func BenchmarkSecretGuardHostCreate(b *testing.B) {
	for _, guarded := range []bool{false, true} {
		b.Run(map[bool]string{false: "unguarded", true: "guarded"}[guarded], func(b *testing.B) {
			dir := b.TempDir()
			if guarded {
				netns, err := sandbox.OpenNetns("")
				if err != nil {
					b.Skip(err)
				}
				defer netns.Close()
				g, err := sandbox.OpenSecretGuard(sandbox.SecretGuardConfig{Roots: []string{dir}, Sensitive: secretNames, Netns: netns.File()})
				if err != nil {
					b.Skip(err)
				}
				defer g.Close()
			}
			var before syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			b.ResetTimer()
			for i := range b.N {
				p := filepath.Join(dir, "f"+strconv.Itoa(i))
				f, err := os.Create(p)
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
				os.Remove(p)
			}
			b.StopTimer()
			var after syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkSecretGuardForeignCreate measures the guard's own CPU (this
// process's) per file another process creates: in a directory outside the
// guarded workspace on the same file system ("foreign": a build, an npm
// install elsewhere on the machine), and in the workspace itself. A child
// process (python3) creates and removes b.N files; the guard has handled
// every event once it marked a secret written after them (one queue, in
// order).
func BenchmarkSecretGuardForeignCreate(b *testing.B) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip(err)
	}
	for _, where := range []string{"foreign", "workspace"} {
		b.Run(where, func(b *testing.B) {
			root := b.TempDir()
			ws, other := filepath.Join(root, "ws"), filepath.Join(root, "other")
			for _, d := range []string{ws, other} {
				if err := os.Mkdir(d, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			dir := other
			if where == "workspace" {
				dir = filepath.Join(ws, "build")
				if err := os.Mkdir(dir, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			netns, err := sandbox.OpenNetns("")
			if err != nil {
				b.Skip(err)
			}
			defer netns.Close()
			marked := make(chan string, 16)
			g, err := sandbox.OpenSecretGuard(sandbox.SecretGuardConfig{Roots: []string{ws}, Sensitive: secretNames, Netns: netns.File(),
				OnMark: func(p string, _ time.Time) { marked <- p }})
			if err != nil {
				b.Skip(err)
			}
			defer g.Close()
			var before, after syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			b.ResetTimer()
			create := exec.Command(py, "-c", `import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    p = "%s/f%d" % (d, i)
    os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
    os.unlink(p)
`, dir, strconv.Itoa(b.N))
			if out, err := create.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			sentinel := filepath.Join(ws, ".env")
			if err := os.WriteFile(sentinel, []byte("S"), 0o600); err != nil {
				b.Fatal(err)
			}
			for p := range marked {
				if p == sentinel {
					break
				}
			}
			b.StopTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
			b.ReportMetric(float64(cpu)/float64(b.N), "guard-cpu-ns/file")
		})
	}
}
