package daemon_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
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

// Issue 25 item 6, the separate approval to run one call outside the
// sandbox, attacked: the model tries to obtain it without a person asked
// in that kind (an exact-call grant a person gave through ask_user for
// exactly that call, a conversation grant of the same command, a
// conversation grant of the tool), to widen an approval it got (the same
// call again, in the background, with a changed environment or
// directory), and to get the refused write done anyway inside (the path
// hidden from the judge). Every outside-sandbox question is refused;
// by effect, no canary outside the workspace is written.
func TestOutsideSandboxApprovalCannotBeObtainedOrWidenedEndToEnd(t *testing.T) {
	sandboxed(t)
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "auto" }))
	out := t.TempDir()
	x := newSession(t, d)
	joinedAs(t, x, "outside-attacker")
	n := 0
	canaryCmd := func() (string, string) {
		n++
		p := filepath.Join(out, fmt.Sprint("c", n))
		return p, "echo owned > " + p
	}
	outsideAsked := 0
	refuseOutside := func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		if a.GetKind() == pb.ApprovalKind_APPROVAL_KIND_OUTSIDE_SANDBOX {
			outsideAsked++
			return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Reason: "no"}
		}
		// Any other question: a person grants it for the conversation
		// when offered (the widest a person gives), else once.
		for _, s := range a.GetScopes() {
			if s.GetKind() == pb.ApprovalScope_KIND_CONVERSATION {
				return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true, ScopeId: s.GetScopeId()}
			}
		}
		return approveOnce(a)
	}
	var written []string
	check := func(p string) {
		if _, err := os.Stat(p); err == nil {
			written = append(written, p)
		}
	}

	// 1. An exact-call grant through ask_user, the person answering a plain
	// yes, for exactly the outside call.
	p, cmd := canaryCmd()
	args := map[string]any{"command": cmd, "outside_sandbox": true}
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "ask", Name: "ask_user",
		Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: mustJSON(t, map[string]any{"prompt": "May I run this?", "require_approval": true,
			"authorize_operation": "terminal_operations.run_command", "authorize_arguments": args})}}}})
	for done := false; !done; {
		ev, err := x.s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if q := ev.GetInputRequired(); q != nil {
			x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Input{Input: &pb.Input{CallId: "ask", RequestId: q.GetRequestId(), Payload: &pb.Input_Text{Text: "yes"}}}})
		}
		if a := ev.GetRequiresApproval(); a != nil {
			x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Approval{Approval: refuseOutside(a)}})
		}
		done = ev.GetEnd() != nil && ev.GetCallId() == "ask"
	}
	before := outsideAsked
	x.call("exact", "run_command", mustJSON(t, args), refuseOutside)
	check(p)
	if outsideAsked != before+1 {
		t.Errorf("the exact-call grant ran the call outside the sandbox without its own question")
	}

	// 2. A conversation grant of a delete (AUTO asks; the person grants
	// it for the conversation), then the granted line outside, alone and
	// with a write outside, in the background, with an environment or a
	// directory.
	if res, _ := x.call("grant", "run_command", `{"command":"rm -f nothing-here"}`, refuseOutside); !res.GetSuccess() {
		t.Fatalf("the granted delete: %v", res)
	}
	before = outsideAsked
	x.call("granted-outside", "run_command", `{"command":"rm -f nothing-here","outside_sandbox":true}`, refuseOutside)
	if outsideAsked != before+1 {
		t.Errorf("a conversation grant ran its command outside the sandbox without its own question")
	}
	p, cmd = canaryCmd()
	for i, extra := range []map[string]any{{}, {"is_background": true}, {"env": map[string]string{"LANG": "C"}}, {"working_dir": "."}} {
		before := outsideAsked
		a := map[string]any{"command": "rm -f nothing-here && " + cmd, "outside_sandbox": true}
		for k, v := range extra {
			a[k] = v
		}
		x.call(fmt.Sprint("widen", i), "run_command", mustJSON(t, a), refuseOutside)
		check(p)
		if outsideAsked != before+1 {
			t.Errorf("%v: ran outside without its own question", extra)
		}
	}

	// 3. The write outside that AUTO asked about, the person refused, then
	// done with the path hidden: it runs inside, where the kernel refuses.
	p, cmd = canaryCmd()
	x.call("asked", "run_command", mustJSON(t, map[string]any{"command": cmd}), refuseOutside)
	hidden := fmt.Sprintf(`echo owned > "$(echo %s | base64 -d)"`, base64.StdEncoding.EncodeToString([]byte(p)))
	x.call("hidden", "run_command", mustJSON(t, map[string]any{"command": hidden}), refuseOutside)
	x.call("hidden-bg", "run_command", mustJSON(t, map[string]any{"command": hidden, "is_background": true}), refuseOutside)
	check(p)
	if len(written) > 0 {
		t.Errorf("written outside the workspace: %v", written)
	}
	t.Logf("%d outside-sandbox questions, all refused", outsideAsked)
}
