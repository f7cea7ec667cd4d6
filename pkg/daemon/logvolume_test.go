package daemon_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// At the default level (info) toold writes no line per successful call:
// the per-call lines (the policy's decision, the call's end) are debug,
// so a sustained load does not fill the operator's disk with toold's own
// log. A failed call writes one line.
func TestLogVolumePerCall(t *testing.T) {
	var buf testenv.Buffer
	d := daemontest.Start(t, func(m *daemon.Main) {
		m.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	x := newSession(t, d)
	hello(x, "volume")
	before := strings.Count(buf.String(), "\n")
	const n = 50
	for i := range n {
		if res, _ := x.call(fmt.Sprint(i), "think", `{"thought": "x"}`); !res.GetSuccess() {
			t.Fatalf("think: %v", res)
		}
	}
	lines := strings.Count(buf.String(), "\n") - before
	t.Logf("%d log lines for %d successful calls at info level", lines, n)
	if lines != 0 {
		t.Fatalf("%d lines for %d calls at info level, want none:\n%s", lines, n, buf.String())
	}
	x.call("bad", "no_such_tool", `{}`)
	if got := strings.Count(buf.String(), "\n") - before; got != 1 {
		t.Fatalf("a failed call wrote %d lines, want 1:\n%s", got, buf.String())
	}
}
