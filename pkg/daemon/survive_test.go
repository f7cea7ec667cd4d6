package daemon_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// runningWith reports whether a process named name (its argv[0], as
// `exec -a name` sets it) runs (see testenv.Named: a process found by
// a substring could seem gone right after it had been seen, 1 run in 20
// under -race).
func runningWith(name string) bool { return len(testenv.Named(name)) > 0 }

// With terminal.survive: keep, an ordinary shutdown leaves background
// processes running and the next toold on the state directory adopts
// them: the same conversation reaches them with its secret, their output
// written meanwhile is read, and kill stops them. With the default (stop),
// the shutdown stops them.
func TestSurviveShutdown(t *testing.T) {
	for _, mode := range []string{"keep", "stop"} {
		t.Run(mode, func(t *testing.T) {
			state := t.TempDir()
			marker := fmt.Sprintf("survive-%s-%d", mode, time.Now().UnixNano())
			// Passed or failed, nothing the test started outlives it.
			daemontest.KillLeftovers(t, state, marker)
			opt := daemontest.WithConfig(func(c *config.Config) { c.StateDir = state; c.Terminal.Survive = mode })
			d1 := daemontest.Start(t, opt)
			x := newSession(t, d1)
			x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "keep-" + mode}}})
			welcome, err := x.s.Recv()
			if err != nil {
				t.Fatal(err)
			}
			secret := welcome.GetWelcome().GetConversationSecret()
			r, _ := x.call("bg", "run_command", fmt.Sprintf(`{"command":"echo before; sleep 1; echo after; exec -a %s sleep 1000","is_background":true}`, marker))
			id := r.GetStructured().GetFields()["process_id"].GetStringValue()
			testenv.Poll(t, 20*time.Second, "the process", func() bool { return runningWith(marker) })
			if err := d1.Main.Close(); err != nil {
				t.Fatal(err)
			}
			if mode == "stop" {
				if runningWith(marker) {
					t.Fatal("an ordinary shutdown left the process running")
				}
				return
			}
			if !runningWith(marker) {
				t.Fatal("the process did not outlive the shutdown")
			}
			d2 := daemontest.Start(t, opt)
			y := newSession(t, d2)
			y.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "keep-" + mode, ConversationSecret: secret}}})
			r, _ = y.call("out", "get_output", fmt.Sprintf(`{"process_id":%q,"from_index":0}`, id))
			if text := r.GetContent()[0].GetText(); !strings.Contains(text, "before") || !strings.Contains(text, "after") {
				t.Fatalf("the adopted process's output:\n%s", text)
			}
			r, _ = y.call("kill", "kill", fmt.Sprintf(`{"process_id":%q}`, id), approveOnce)
			if !r.GetSuccess() {
				t.Fatalf("kill: %v", r)
			}
			if runningWith(marker) {
				t.Fatal("the adopted process still runs after kill")
			}
		})
	}
}
