package daemon_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// Issue 25 item 4, AUTO's ask rate against safety: commands the judge
// finds harmless run without asking, so their effects must be held by
// the sandbox and by toold's own bounds — here, the effects on toold and
// on time rather than on files: output floods that would grow toold's
// memory, and background processes, terminal sessions and setsid orphans
// that would outlive their conversation. Each runs in AUTO with the
// default configuration (short idle TTL and resume grace, so that the
// conversation is forgotten within the test), unasked, and the effect is checked: toold's
// heap did not grow with the output, and no process of the conversation
// is left once toold forgot it.
func TestAutoHarmlessEffectsBoundedEndToEnd(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "auto"
		c.Conversations.IdleTTL = config.Duration(time.Second)
		c.Conversations.ResumeGrace = config.Duration(time.Second)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stream, err := d.Client.ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	x := &session{t: t, s: stream}
	if !helloLayers(t, x, "auto-bounds", "resources") {
		t.Skip("the sandbox's resources layer is not in force here")
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()
	floods := []string{
		`head -c 100000000 /dev/zero | tr '\0' x`,
		`yes 0123456789 | head -n 2000000`,
		`head -c 20000000 /dev/urandom | base64 -w0 >&2`,
	}
	for i, f := range floods {
		res, _ := x.call(fmt.Sprint("flood", i), "run_command", mustJSON(t, map[string]any{"command": f, "timeout": 60}))
		if len(text(res)) > 1<<20 {
			t.Errorf("%s: the model was handed %d bytes", f, len(text(res)))
		}
	}
	grew := int64(heap()) - int64(before)
	t.Logf("toold's heap (with the test's) grew by %d KiB over 150 MB of output", grew>>10)
	if grew > 64<<20 {
		t.Errorf("toold's heap grew by %d MiB over 150 MB of output", grew>>20)
	}
	// Processes meant to outlive the conversation: a background
	// process, a terminal session's job, a setsid orphan of a foreground
	// command, a nohup'd double fork from a background process.
	mark := "OUTLIVE" + randomHex(t, 6)
	x.call("bg", "run_command", mustJSON(t, map[string]any{"command": "sh -c 'sleep 300; :' " + mark + "-bg", "is_background": true}))
	res, _ := x.call("open", "create_session", `{}`)
	sid, _ := res.GetStructured().AsMap()["session_id"].(string)
	x.call("job", "send_input", mustJSON(t, map[string]any{"session_id": sid, "data": "nohup sh -c 'sleep 300; :' " + mark + "-session >/dev/null 2>&1 &\n"}))
	x.call("orphan", "run_command", mustJSON(t, map[string]any{"command": "setsid nohup sh -c 'sleep 300; :' " + mark + "-orphan >/dev/null 2>&1 < /dev/null & disown; true"}))
	x.call("double", "run_command", mustJSON(t, map[string]any{"command": "( ( setsid sh -c 'sleep 300; :' " + mark + "-double & ) & ) ; sleep 1", "is_background": true}))
	if !testenv.Until(30*time.Second, func() bool {
		return len(processesWith(mark+"-bg")) > 0 && len(processesWith(mark+"-session")) > 0 && len(processesWith(mark+"-double")) > 0
	}) {
		for _, s := range []string{"-bg", "-session", "-orphan", "-double"} {
			t.Logf("%s: %v", s, processesWith(mark+s))
		}
		r, _ := x.call("out", "get_output", mustJSON(t, map[string]any{"session_id": sid, "raw": true}))
		t.Fatalf("the conversation's processes did not start; session: %s", text(r))
	}
	// The stream ends; toold forgets the conversation after its resume
	// grace and idle TTL.
	x.s.CloseSend()
	cancel()
	if !testenv.Until(60*time.Second, func() bool { return len(processesWith(mark)) == 0 }) {
		var left []string
		for _, s := range []string{"-bg", "-session", "-orphan", "-double"} {
			if p := processesWith(mark + s); len(p) > 0 {
				left = append(left, fmt.Sprintf("%s %v", s, p))
			}
		}
		t.Errorf("processes outlived their forgotten conversation: %s", strings.Join(left, ", "))
	}
	// toold still serves.
	y := newSession(t, d)
	joinedAs(t, y, "after")
	if r, _ := y.call("t", "run_command", `{"command":"echo alive"}`); !strings.Contains(text(r), "alive") {
		t.Fatalf("toold after the floods: %v", r)
	}
}
