package terminal_test

import (
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// Benchmarks of what a command costs through toold against running it
// bare, in one run:
//
//	go test -run '^$' -bench 'ForkExec|RunCommand|RawPipe|Streamed' -benchtime 2s ./pkg/tools/terminal/
//
// ForkExecTrue and RunCommandTrue compare starting a process: bare
// fork/exec of true against run_command "true" through a real daemon's
// stream (the helper's start, bash, the pipes, the call's events).
// RawPipe and StreamedOutput compare moving output: 200 MB read from a
// pipe against 200 MB streamed to the client as output chunks (and kept).

const streamBytes = 200 << 20

func BenchmarkForkExecTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForkExecBashTrue is what run_command "true" runs, bare: the
// baseline of RunCommandTrue and ManagerRunTrue.
func BenchmarkForkExecBashTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunCommandTrue uses the test binary as the helper.
func BenchmarkRunCommandTrue(b *testing.B) {
	benchRunTrue(b, startDaemon(b))
}

// BenchmarkRunCommandTrueToold uses the toold binary as the helper, as a
// toold without toold-helper next to it re-executes itself.
func BenchmarkRunCommandTrueToold(b *testing.B) {
	helper := buildBinary(b, "github.com/toold/toold/cmd/toold")
	benchRunTrue(b, startDaemon(b, func(c *config.Config) { c.Terminal.Helper = helper }))
}

// BenchmarkRunCommandTrueSmallHelper uses the toold-helper binary, as a
// toold installed with make build does.
func BenchmarkRunCommandTrueSmallHelper(b *testing.B) {
	helper := buildBinary(b, "github.com/toold/toold/cmd/toold-helper")
	benchRunTrue(b, startDaemon(b, func(c *config.Config) { c.Terminal.Helper = helper }))
}

func buildBinary(b *testing.B, pkg string) string {
	out := filepath.Join(b.TempDir(), filepath.Base(pkg))
	if msg, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		b.Skipf("cannot build %s: %v\n%s", pkg, err, msg)
	}
	return out
}

func benchRunTrue(b *testing.B, d *daemontest.Daemon) {
	c := startConversation(b, d, "bench")
	i := 0
	for b.Loop() {
		i++
		id := strconv.Itoa(i)
		c.send(id, "run_command", map[string]any{"command": "true"})
		if r := c.until(id, nil); !r.GetSuccess() {
			b.Fatal(r)
		}
	}
}

func BenchmarkRawPipe(b *testing.B) {
	b.SetBytes(streamBytes)
	buf := make([]byte, 64<<10)
	for b.Loop() {
		cmd := exec.Command("head", "-c", strconv.Itoa(streamBytes), "/dev/zero")
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyBuffer(io.Discard, out, buf)
		if err != nil || n != streamBytes {
			b.Fatal(n, err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamedOutput(b *testing.B) {
	b.SetBytes(streamBytes)
	d := startDaemon(b, func(c *config.Config) { c.Terminal.KeepTotal = 4 << 30 })
	c := startConversation(b, d, "bench")
	i := 0
	for b.Loop() {
		i++
		id := strconv.Itoa(i)
		c.send(id, "run_command", map[string]any{"command": "head -c " + strconv.Itoa(streamBytes) + " /dev/zero"})
		var n int
		r := c.until(id, func(ev *pb.ServerEvent) { n += len(ev.GetProgress().GetOutput().GetData()) })
		if !r.GetSuccess() || n != streamBytes {
			b.Fatal(n, r)
		}
	}
}

// BenchmarkManagerRunTrue is run_command "true" without the daemon's
// stream: the helper, bash and the pipes.
func BenchmarkManagerRunTrue(b *testing.B) {
	e := newEnv(b)
	for b.Loop() {
		if _, err := e.call(nil, "bench", "c", "run_command", map[string]any{"command": "true"}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
