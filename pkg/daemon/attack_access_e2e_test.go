package daemon_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/service"
)

// Issue 25 item 8 attacked from the model's side: who may see what, when
// the one asking is another conversation's model. Alice's conversation
// leaves records of every kind: a command's kept output (call id "out",
// an id any model would guess), a background process and a terminal
// session still printing her secret, a conversation-scoped memory and a
// todo list. Mallory's model — in the same toold, with ids it guessed,
// enumerated or (the worst case) read somewhere — calls every tool that
// takes a call, process, session or memory id, and the read-side RPCs
// with alice's conversation id but without her secret. By effect: none
// of alice's secrets reaches mallory's stream or answers; alice's process,
// session, memory and todos are still there and unchanged; nothing
// mallory typed reached alice's terminal; and an id of alice's is refused
// exactly as an id that does not exist (the error does not tell it
// exists).
func TestModelCannotReachAnotherConversationEndToEnd(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	secret := "ALICE-PRIVATE-" + randomHex(t, 8)
	alice := newSession(t, d)
	aliceSecret := joinedAs(t, alice, "alice")
	// The secret is computed by the commands, so that no command line
	// holds it.
	printSecret := fmt.Sprintf(`echo ALICE-PRIVATE-$(echo %s)`, strings.TrimPrefix(secret, "ALICE-PRIVATE-"))
	if res, _ := alice.call("out", "run_command", mustJSON(t, map[string]any{"command": printSecret})); !strings.Contains(text(res), secret) {
		t.Fatalf("alice's command: %s", text(res))
	}
	res, _ := alice.call("bg", "run_command", mustJSON(t, map[string]any{"command": printSecret + "; sleep 600", "is_background": true}))
	procID, _ := res.GetStructured().AsMap()["process_id"].(string)
	res, _ = alice.call("open", "create_session", `{}`)
	sessID, _ := res.GetStructured().AsMap()["session_id"].(string)
	if procID == "" || sessID == "" {
		t.Fatalf("alice's process %q, session %q", procID, sessID)
	}
	alice.call("type", "send_input", mustJSON(t, map[string]any{"session_id": sessID, "data": printSecret + "\n"}))
	res, _ = alice.call("mem", "store_memory", mustJSON(t, map[string]any{"content": "alice's deploy key is " + secret, "scope": "conversation", "tags": []string{"alice"}}))
	memID, _ := res.GetStructured().AsMap()["id"].(string)
	if memID == "" {
		t.Fatalf("store_memory: %v", res)
	}
	alice.call("todo", "manage_todos", mustJSON(t, map[string]any{"action": "write", "todos": []map[string]any{{"title": "rotate " + secret}}}))

	mallory := newSession(t, d)
	joinedAs(t, mallory, "mallory")
	marker := "MALLORY-TYPED-" + randomHex(t, 6)
	// Ids alice's records might have, by guess and by leak.
	ids := []string{procID, sessID, memID, "out", "bg", "open", "1", "0"}
	type attack struct{ tool, args string }
	var attacks []attack
	for _, id := range ids {
		attacks = append(attacks,
			attack{"read_output", mustJSON(t, map[string]any{"call_id": id})},
			attack{"read_output", mustJSON(t, map[string]any{"call_id": id, "pattern": "ALICE"})},
			attack{"get_output", mustJSON(t, map[string]any{"process_id": id})},
			attack{"get_output", mustJSON(t, map[string]any{"session_id": id, "raw": true})},
			attack{"get_history", mustJSON(t, map[string]any{"session_id": id})},
			attack{"send_input", mustJSON(t, map[string]any{"session_id": id, "data": "echo " + marker + "\n"})},
			attack{"resize", mustJSON(t, map[string]any{"session_id": id, "rows": 5, "cols": 20})},
			attack{"wait", mustJSON(t, map[string]any{"process_id": id, "timeout": 1})},
			attack{"kill", mustJSON(t, map[string]any{"process_id": id})},
			attack{"close_session", mustJSON(t, map[string]any{"session_id": id})},
			attack{"update_memory", mustJSON(t, map[string]any{"id": id, "content": "overwritten by mallory"})},
			attack{"delete_memory", mustJSON(t, map[string]any{"id": id})},
		)
	}
	attacks = append(attacks,
		attack{"list_processes", `{}`},
		attack{"search_memory", mustJSON(t, map[string]any{"query": "alice deploy key"})},
		attack{"search_memory", mustJSON(t, map[string]any{"query": "deploy key", "scope": "conversation"})},
		attack{"list_memories", `{}`},
		attack{"list_memories", mustJSON(t, map[string]any{"scope": "conversation", "tags": []string{"alice"}})},
		attack{"manage_todos", `{"action":"read"}`},
		// A session of mallory's own named like alice's, and a command that
		// looks for alice's ids where a sandboxed command could.
		attack{"create_session", mustJSON(t, map[string]any{"name": sessID})},
		attack{"run_command", `{"command":"ls -la /proc /tmp \"$TMPDIR\" 2>&1; cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' '; grep -rs ALICE-PRIVATE \"$TMPDIR\" /tmp . 2>/dev/null | head"}`},
	)
	idRe := regexp.MustCompile(regexp.QuoteMeta(procID) + "|" + regexp.QuoteMeta(sessID) + "|" + regexp.QuoteMeta(memID))
	for i, a := range attacks {
		id := fmt.Sprintf("m%03d", i)
		mallory.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: a.tool, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: a.args}}}})
		var all strings.Builder
		var r *pb.ToolResult
		for r == nil {
			ev, err := mallory.s.Recv()
			if err != nil {
				t.Fatalf("%s %s: recv: %v", a.tool, a.args, err)
			}
			all.WriteString(protojson.Format(ev))
			if ap := ev.GetRequiresApproval(); ap != nil {
				mallory.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Approval{Approval: &pb.ApprovalDecision{ApprovalId: ap.GetApprovalId(), Reason: "no"}}})
			}
			if e := ev.GetEnd(); e != nil && ev.GetCallId() == id {
				r = e.GetResult()
			}
		}
		if strings.Contains(all.String(), "ALICE-PRIVATE") || strings.Contains(all.String(), "overwritten") && a.tool != "update_memory" {
			t.Errorf("%s %s showed alice's records: %s", a.tool, a.args, all.String())
		}
		// An id of alice's gets the answer an unknown id gets: with the id
		// replaced, the error is the same as for a fresh random id.
		if strings.Contains(a.args, procID) || strings.Contains(a.args, sessID) || strings.Contains(a.args, memID) {
			probe := idRe.ReplaceAllString(a.args, "zz-unknown-id")
			pid := fmt.Sprintf("p%03d", i)
			pr, _ := mallory.call(pid, a.tool, probe, deny("no"))
			got := idRe.ReplaceAllString(r.GetError().GetMessage(), "zz-unknown-id")
			if r.GetSuccess() && a.tool != "create_session" || got != pr.GetError().GetMessage() || r.GetError().GetCode() != pr.GetError().GetCode() {
				t.Errorf("%s on alice's id answers otherwise than on an unknown id:\n alice's: %v %s\n unknown: %v %s", a.tool, r.GetSuccess(), r.GetError().GetMessage(), pr.GetSuccess(), pr.GetError().GetMessage())
			}
		}
	}
	t.Logf("%d tool calls by mallory", len(attacks))

	// The read-side RPCs with alice's conversation id and mallory's own
	// secret, as mallory's model would get them through a client.
	mallorySecret := joinedSecret(t, d, "mallory2")
	ctx := metadata.AppendToOutgoingContext(context.Background(), service.SecretMetadata, mallorySecret)
	for name, call := range map[string]func() (string, error){
		"Changes": func() (string, error) {
			r, err := pb.NewCheckpointServiceClient(d.Conn).Changes(ctx, &pb.ChangesRequest{ConversationId: "alice", Diff: true})
			return r.String(), err
		},
		"Rewind": func() (string, error) {
			r, err := pb.NewCheckpointServiceClient(d.Conn).Rewind(ctx, &pb.RewindRequest{ConversationId: "alice", CallId: "out"})
			return r.String(), err
		},
		"Watch": func() (string, error) {
			s, err := pb.NewWorkspaceServiceClient(d.Conn).Watch(ctx, &pb.WatchRequest{ConversationId: "alice"})
			if err != nil {
				return "", err
			}
			m, err := s.Recv()
			return m.String(), err
		},
		"ListSessions": func() (string, error) {
			r, err := pb.NewTerminalServiceClient(d.Conn).ListSessions(ctx, &pb.ListSessionsRequest{ConversationId: "alice"})
			return r.String(), err
		},
		"History": func() (string, error) {
			r, err := pb.NewHistoryServiceClient(d.Conn).Query(ctx, &pb.QueryHistoryRequest{ConversationId: "alice"})
			return r.String(), err
		},
	} {
		shown, err := call()
		if status.Code(err) != codes.PermissionDenied || strings.Contains(shown, "ALICE") {
			t.Errorf("%s of alice with mallory's secret: %v %s", name, err, shown)
		}
	}

	// Alice's records are intact: her process runs, her session is open
	// and never saw mallory's line, her memory and todos are unchanged.
	res, _ = alice.call("ps", "list_processes", `{}`)
	if !strings.Contains(text(res), procID) || !strings.Contains(text(res), "running") {
		t.Errorf("alice's background process is gone: %s", text(res))
	}
	res, _ = alice.call("hist", "get_output", mustJSON(t, map[string]any{"session_id": sessID, "raw": true}))
	if strings.Contains(text(res), marker) || !res.GetSuccess() {
		t.Errorf("alice's session: %v %s", res.GetSuccess(), text(res))
	}
	res, _ = alice.call("list", "list_memories", `{"scope":"conversation"}`)
	if !strings.Contains(text(res), secret) || strings.Contains(text(res), "overwritten") {
		t.Errorf("alice's memory was changed: %s", text(res))
	}
	res, _ = alice.call("todos", "manage_todos", `{"action":"read"}`)
	if !strings.Contains(text(res), "rotate "+secret) {
		t.Errorf("alice's todos: %s", text(res))
	}
	if g, err := pb.NewMemoryServiceClient(d.Conn).GetTodos(metadata.AppendToOutgoingContext(context.Background(), service.SecretMetadata, aliceSecret), &pb.GetTodosRequest{ConversationId: "alice"}); err != nil || !strings.Contains(g.String(), secret) {
		t.Errorf("alice's own secret does not read her todos: %v %v", g, err)
	}
}

// joinedAs sends x's Hello for conversation conv and returns its secret.
func joinedAs(t *testing.T, x *session, conv string) string {
	t.Helper()
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: conv}}})
	w, err := x.s.Recv()
	if err != nil || w.GetWelcome().GetConversationSecret() == "" {
		t.Fatalf("welcome: %v %v", w, err)
	}
	return w.GetWelcome().GetConversationSecret()
}
