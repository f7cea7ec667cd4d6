package daemon_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/service"
)

// joined starts a conversation with a call of each kind whose records the
// read-side services show, and returns its secret and its terminal
// session's id. The stream stays open (the conversation is held).
func joined(t *testing.T, d *daemontest.Daemon, conv string) (secret, session string) {
	t.Helper()
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: conv}}})
	w, err := x.s.Recv()
	if err != nil || w.GetWelcome().GetConversationSecret() == "" {
		t.Fatalf("welcome: %v %v", w, err)
	}
	x.call("t", "think", `{"thought":"private thought of `+conv+`"}`)
	x.call("todo", "manage_todos", `{"action": "write", "todos": [{"title": "secret plan of `+conv+`"}]}`)
	res, _ := x.call("open", "create_session", `{}`)
	session, _ = res.GetStructured().AsMap()["session_id"].(string)
	if session == "" {
		t.Fatalf("create_session: %v", res)
	}
	return w.GetWelcome().GetConversationSecret(), session
}

// Issue 25 item 8: who may see what. Every read-side RPC is tried with
// nothing, with another conversation's secret, with the conversation's
// own secret and with the operator credential; each either answers (with
// that conversation's records only) or is PERMISSION_DENIED and shows
// nothing.
func TestWhoMaySeeWhatEndToEnd(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	aliceSecret, aliceSession := joined(t, d, "alice")
	bobSecret, _ := joined(t, d, "bob")
	bg := context.Background()
	with := func(secret string) context.Context {
		return metadata.AppendToOutgoingContext(bg, service.SecretMetadata, secret)
	}
	callers := []struct {
		name string
		ctx  context.Context
		// one: may read alice's records; all: may read every conversation's
		one, all bool
	}{
		{"nothing", bg, false, false},
		{"bob's secret", with(bobSecret), false, false},
		{"a guessed operator credential", metadata.AppendToOutgoingContext(bg, service.OperatorMetadata, strings.Repeat("0", 64)), false, false},
		{"alice's secret", with(aliceSecret), true, false},
		{"the operator", d.AsOperator(bg), true, true},
	}
	hist := pb.NewHistoryServiceClient(d.Conn)
	audit := pb.NewAuditServiceClient(d.Conn)
	term := pb.NewTerminalServiceClient(d.Conn)
	mem := pb.NewMemoryServiceClient(d.Conn)
	// Each RPC returns what it showed (to check that no other
	// conversation leaks into an allowed answer) and its error.
	rpcs := []struct {
		name  string
		every bool // reads every conversation's records
		call  func(ctx context.Context) (string, error)
	}{
		{"HistoryService.Query one", false, func(ctx context.Context) (string, error) {
			r, err := hist.Query(ctx, &pb.QueryHistoryRequest{ConversationId: "alice"})
			return r.String(), err
		}},
		{"HistoryService.Query all", true, func(ctx context.Context) (string, error) {
			r, err := hist.Query(ctx, &pb.QueryHistoryRequest{})
			return r.String(), err
		}},
		{"AuditService.Tail", true, func(ctx context.Context) (string, error) {
			r, err := audit.Tail(ctx, &pb.TailAuditRequest{})
			return r.String(), err
		}},
		{"AuditService.Verify", true, func(ctx context.Context) (string, error) {
			r, err := audit.Verify(ctx, &pb.VerifyAuditRequest{})
			return r.String(), err
		}},
		{"AuditService.Export", true, func(ctx context.Context) (string, error) {
			s, err := audit.Export(ctx, &pb.ExportAuditRequest{})
			if err != nil {
				return "", err
			}
			var b strings.Builder
			for {
				m, err := s.Recv()
				if err == io.EOF {
					return b.String(), nil
				}
				if err != nil {
					return b.String(), err
				}
				b.Write(m.GetJsonl())
			}
		}},
		{"TerminalService.ListSessions one", false, func(ctx context.Context) (string, error) {
			r, err := term.ListSessions(ctx, &pb.ListSessionsRequest{ConversationId: "alice"})
			return r.String(), err
		}},
		{"TerminalService.ListSessions all", true, func(ctx context.Context) (string, error) {
			r, err := term.ListSessions(ctx, &pb.ListSessionsRequest{})
			return r.String(), err
		}},
		{"TerminalService.Attach", false, func(ctx context.Context) (string, error) {
			s, err := term.Attach(ctx)
			if err != nil {
				return "", err
			}
			defer s.CloseSend()
			// The secret travels in AttachOpen, as toolctl sends it.
			sec, _ := metadata.FromOutgoingContext(ctx)
			open := &pb.AttachOpen{Target: &pb.AttachOpen_SessionId{SessionId: aliceSession}}
			if v := sec.Get(service.SecretMetadata); len(v) > 0 {
				open.ConversationSecret = v[0]
			}
			if err := s.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: open}}); err != nil {
				return "", err
			}
			m, err := s.Recv()
			return m.String(), err
		}},
		{"MemoryService.GetTodos one", false, func(ctx context.Context) (string, error) {
			r, err := mem.GetTodos(ctx, &pb.GetTodosRequest{ConversationId: "alice"})
			return r.String(), err
		}},
		{"MemoryService.GetTodos all", true, func(ctx context.Context) (string, error) {
			r, err := mem.GetTodos(ctx, &pb.GetTodosRequest{})
			return r.String(), err
		}},
		{"MemoryService.WatchTodos one", false, func(ctx context.Context) (string, error) {
			s, err := mem.WatchTodos(ctx, &pb.WatchTodosRequest{ConversationId: "alice"})
			if err != nil {
				return "", err
			}
			m, err := s.Recv()
			return m.String(), err
		}},
	}
	for _, r := range rpcs {
		for _, c := range callers {
			t.Run(r.name+"/"+c.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(c.ctx)
				defer cancel()
				shown, err := r.call(ctx)
				allowed := c.one && !r.every || c.all
				if !allowed {
					if status.Code(err) != codes.PermissionDenied {
						t.Fatalf("answered (%v): %s", err, shown)
					}
					if strings.Contains(shown, "alice") {
						t.Fatalf("refused, yet showed alice's records: %s", shown)
					}
					return
				}
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !r.every && strings.Contains(shown, "bob") {
					t.Fatalf("alice's records showed bob's: %s", shown)
				}
			})
		}
	}
}

// The operator credential is a 0600 file in the state directory, kept
// across restarts; one that others could read is replaced.
func TestOperatorCredentialFile(t *testing.T) {
	state := t.TempDir()
	start := func() string {
		d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.StateDir = state }))
		defer d.Main.Close()
		return d.Main.OperatorCredential()
	}
	first := start()
	path := filepath.Join(state, daemon.OperatorKeyFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || len(first) != 64 {
		t.Fatalf("operator.key: %v %v, credential %q", fi, err, first)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != first {
		t.Fatalf("the file holds %q, the daemon uses %q", b, first)
	}
	if again := start(); again != first {
		t.Fatalf("a restart changed the credential")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if third := start(); third == first || len(third) != 64 {
		t.Fatalf("a credential others could read was kept")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("the new file's mode is %v", fi.Mode())
	}
}

// Issue 25 item 8, the doors that change things: the AdminService (MCP
// servers: list, add, remove) is the operator's only; a conversation's
// grants are listed and revoked with its secret or as the operator, every
// conversation's only as the operator, and Explain consults them only for
// such a client. Each refusal is PERMISSION_DENIED,
// says what to present, and changes nothing.
func TestOperatorDoorsEndToEnd(t *testing.T) {
	d := daemontest.Start(t)
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "alice"}}})
	w, err := x.s.Recv()
	if err != nil || w.GetWelcome().GetConversationSecret() == "" {
		t.Fatalf("welcome: %v %v", w, err)
	}
	alice := w.GetWelcome().GetConversationSecret()
	os.WriteFile(filepath.Join(d.Workspace, "old.txt"), []byte("x"), 0o644)
	// A delete asks in AUTO; alice's person grants it for the conversation.
	res, _ := x.call("rm", "run_command", `{"command":"rm -f old.txt"}`, func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		for _, s := range a.GetScopes() {
			if s.GetKind() == pb.ApprovalScope_KIND_CONVERSATION {
				return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true, ScopeId: s.GetScopeId()}
			}
		}
		t.Fatalf("no conversation scope offered: %v", a)
		return nil
	})
	if !res.GetSuccess() {
		t.Fatalf("rm: %v", res)
	}
	bg := context.Background()
	bob := joinedSecret(t, d, "bob")
	with := func(secret string) context.Context {
		return metadata.AppendToOutgoingContext(bg, service.SecretMetadata, secret)
	}
	pol := pb.NewPolicyServiceClient(d.Conn)
	adm := pb.NewAdminServiceClient(d.Conn)
	grants, err := pol.ListGrants(d.AsOperator(bg), &pb.ListGrantsRequest{ConversationId: "alice"})
	if err != nil || len(grants.GetGrants()) != 1 {
		t.Fatalf("the operator lists alice's grants: %v %v", grants, err)
	}
	grant := grants.GetGrants()[0].GetGrantId()

	refused := func(t *testing.T, err error, want string) {
		t.Helper()
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), want) {
			t.Fatalf("got %v, want PERMISSION_DENIED mentioning %q", err, want)
		}
	}
	rmAgain := &pb.ExplainRequest{Name: "run_command", Arguments: &pb.ExplainRequest_ArgumentsJson{ArgumentsJson: `{"command":"rm -f old.txt"}`}, ConversationId: "alice"}
	guessed := metadata.AppendToOutgoingContext(bg, service.OperatorMetadata, strings.Repeat("0", 64))
	for name, ctx := range map[string]context.Context{"nothing": bg, "bob's secret": with(bob), "a guessed operator credential": guessed, "alice's secret": with(alice)} {
		t.Run("admin/"+name, func(t *testing.T) {
			_, err := adm.ListMcpServers(ctx, &pb.ListMcpServersRequest{})
			refused(t, err, "operator credential")
			_, err = adm.AddMcpServer(ctx, &pb.AddMcpServerRequest{Name: "evil", Config: &pb.McpServerConfig{Command: "/nonexistent/evil"}})
			refused(t, err, "operator credential")
			_, err = adm.RemoveMcpServer(ctx, &pb.RemoveMcpServerRequest{Name: "evil"})
			refused(t, err, "operator credential")
		})
		if name == "alice's secret" {
			continue
		}
		t.Run("grants/"+name, func(t *testing.T) {
			r, err := pol.ListGrants(ctx, &pb.ListGrantsRequest{ConversationId: "alice"})
			refused(t, err, "conversation_secret")
			if strings.Contains(r.String(), grant) {
				t.Fatalf("refused, yet listed alice's grant: %v", r)
			}
			_, err = pol.ListGrants(ctx, &pb.ListGrantsRequest{})
			refused(t, err, "operator credential")
			_, err = pol.RevokeGrant(ctx, &pb.RevokeGrantRequest{GrantId: grant})
			refused(t, err, "conversation_secret")
			// Explain does not tell what alice's person approved: the
			// call is judged as one of no conversation.
			ex, err := pol.Explain(ctx, rmAgain)
			if err != nil || ex.GetGrant() != nil || strings.Contains(ex.String(), grant) || ex.GetDecision() != pb.Decision_DECISION_ASK {
				t.Fatalf("Explain showed alice's grant to a client without her secret: %v %v", ex, err)
			}
		})
	}
	for name, ctx := range map[string]context.Context{"alice's secret": with(alice), "the operator": d.AsOperator(bg)} {
		if ex, err := pol.Explain(ctx, rmAgain); err != nil || ex.GetGrant().GetGrantId() != grant || ex.GetDecision() != pb.Decision_DECISION_ALLOW {
			t.Fatalf("Explain with %s does not show alice's grant: %v %v", name, ex, err)
		}
	}
	// Nothing was added, nothing revoked.
	if l, err := adm.ListMcpServers(d.AsOperator(bg), &pb.ListMcpServersRequest{}); err != nil || len(l.GetServers()) != 0 {
		t.Fatalf("the operator lists the servers: %v %v", l, err)
	}
	if g, err := pol.ListGrants(with(alice), &pb.ListGrantsRequest{ConversationId: "alice"}); err != nil || len(g.GetGrants()) != 1 || g.GetGrants()[0].GetGrantId() != grant {
		t.Fatalf("alice lists her grant: %v %v", g, err)
	}
	if _, err := pol.ListGrants(with(alice), &pb.ListGrantsRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("alice listed every conversation's grants: %v", err)
	}
	// Alice's own secret revokes her grant; the operator may revoke any.
	if _, err := pol.RevokeGrant(with(alice), &pb.RevokeGrantRequest{GrantId: grant}); err != nil {
		t.Fatalf("alice revokes her grant: %v", err)
	}
	if _, err := pol.RevokeGrant(d.AsOperator(bg), &pb.RevokeGrantRequest{GrantId: grant}); status.Code(err) != codes.NotFound {
		t.Fatalf("revoked twice: %v", err)
	}
}

// joinedSecret opens a conversation and returns its secret; the stream
// stays open.
func joinedSecret(t *testing.T, d *daemontest.Daemon, conv string) string {
	t.Helper()
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: conv}}})
	w, err := x.s.Recv()
	if err != nil || w.GetWelcome().GetConversationSecret() == "" {
		t.Fatalf("welcome: %v %v", w, err)
	}
	return w.GetWelcome().GetConversationSecret()
}
