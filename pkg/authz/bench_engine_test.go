package authz_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools"
)

// BenchmarkAuthorize is the policy's share of a call's latency.
func BenchmarkAuthorize(b *testing.B) {
	f := newFixture(b)
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: f.w, Home: f.home})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		req  *authz.Request
	}{
		{"think", &authz.Request{ConversationID: "c", Mode: authz.ModeAuto, Tool: "think", Operation: "think", Risk: tools.RiskLow, Effect: tools.Effect{Display: "Thinking"}}},
		{"read_file", readReq(authz.ModeAuto, "src/main.go")},
		{"run_command", cmdReq(authz.ModeYOLO, "go test ./... && git status")},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := e.Authorize(context.Background(), c.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU reports the process's CPU time per iteration from the call to
// the call of the function it returns: on a shared machine a steadier
// figure than ns/op, which counts the waits for a processor.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N)/1e3, "cpu-µs/op") }
}

// benchLines are command lines as run_command sends them (row 6 of the
// bench is the first): the judge reads each one on every call.
var benchLines = []struct{ name, line string }{
	{"true", "true"},
	{"ls", "ls"},
	{"git_status", "git status"},
	{"pipeline", `find src -name '*.go' -newer go.mod | xargs grep -n "func Test" | sort -k1,1 | uniq -c | head -n 40 > /tmp/tests.txt && wc -l /tmp/tests.txt; git log --oneline -n 5 -- src | cat; echo "done: $(date +%s)"`},
}

// BenchmarkJudgeCommand is the judge's share of run_command: a line as the
// terminal tool describes it (Dir "."), in YOLO (the bench's mode) and
// AUTO.
func BenchmarkJudgeCommand(b *testing.B) {
	f := newFixture(b)
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: f.w, Home: f.home})
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []authz.Mode{authz.ModeYOLO, authz.ModeAuto} {
		for _, l := range benchLines {
			req := &authz.Request{ConversationID: "c", Mode: mode, Tool: "run_command", Operation: "run_command",
				Risk: tools.RiskHigh, Effect: tools.Effect{Command: l.line, Dir: ".", Risk: tools.RiskHigh, CanLeaveSandbox: true}}
			b.Run(mode.String()+"/"+l.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Authorize(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
