package collab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// askSink is a func-field fake sink whose person answers with answer.
type askSink struct {
	answer func(tools.Question) (string, error)
	asked  []tools.Question
}

func (s *askSink) Progress(string, float64) error    { return nil }
func (s *askSink) Output(tools.Stream, []byte) error { return nil }
func (s *askSink) Ask(_ context.Context, q tools.Question) (string, error) {
	s.asked = append(s.asked, q)
	return s.answer(q)
}

// plainSink cannot ask.
type plainSink struct{}

func (plainSink) Progress(string, float64) error    { return nil }
func (plainSink) Output(tools.Stream, []byte) error { return nil }

// grantSink is an askSink that makes grants, as the executor's sink does
// (authz.GrantMaker), recording them.
type grantSink struct {
	askSink
	conv string
	got  []authz.Grant
}

func (s *grantSink) CanGrant() bool { return true }
func (s *grantSink) MakeGrant(sc authz.Scope, once bool, ttl time.Duration, by string) (authz.Grant, error) {
	gr := authz.Grant{ID: "g1", ConversationID: s.conv, Scope: sc, Once: once, ExpiresAt: time.Now().Add(ttl), GrantedBy: by}
	s.got = append(s.got, gr)
	return gr, nil
}

func TestUserCollaboration(t *testing.T) {
	tests := []struct {
		name      string
		args      map[string]any
		answer    string
		wantText  string
		wantGrant bool
		wantErr   error
	}{
		{name: "question", args: map[string]any{"prompt": "Which port?", "choices": []any{"80", "8080"}}, answer: "8080", wantText: "User response: 8080"},
		{name: "approval yes", args: map[string]any{"prompt": "May I write /etc/x?", "require_approval": true, "authorize_operation": "file_operations.write_file", "authorize_arguments": map[string]any{"path": "/etc/x", "content": "x"}},
			answer: "Yes!", wantText: "You may now run file_operations.write_file once", wantGrant: true},
		{name: "approval no", args: map[string]any{"prompt": "May I?", "require_approval": true, "authorize_operation": "file_operations.write_file", "authorize_arguments": map[string]any{"path": "x"}},
			answer: "no, not now", wantText: "did not approve"},
		{name: "approval unclear grants nothing", args: map[string]any{"prompt": "May I?", "require_approval": true, "authorize_operation": "file_operations.write_file", "authorize_arguments": map[string]any{"path": "x"}},
			answer: "hmm, what for?", wantText: "neither a clear yes nor no"},
		// A qualified yes approves something else than the call asked about.
		{name: "qualified yes grants nothing", args: map[string]any{"prompt": "May I run it?", "require_approval": true, "authorize_operation": "terminal_operations.run_command", "authorize_arguments": map[string]any{"command": "rm -rf build"}},
			answer: "yes, but only go test", wantText: "neither a clear yes nor no"},
		{name: "yes then more grants nothing", args: map[string]any{"prompt": "May I run it?", "require_approval": true, "authorize_operation": "terminal_operations.run_command", "authorize_arguments": map[string]any{"command": "rm -rf build"}},
			answer: "Yes, proceed with everything", wantText: "neither a clear yes nor no"},
		{name: "operation without arguments", args: map[string]any{"prompt": "May I?", "require_approval": true, "authorize_operation": "terminal_operations.run_command"}, wantErr: errdefs.ErrInvalidArgument},
		{name: "arguments without operation", args: map[string]any{"prompt": "May I?", "require_approval": true, "authorize_arguments": map[string]any{"command": "ls"}}, wantErr: errdefs.ErrInvalidArgument},
		{name: "approval without operation", args: map[string]any{"prompt": "Continue?", "require_approval": true}, answer: "ok", wantText: "The user approved: ok"},
		{name: "operation without approval", args: map[string]any{"prompt": "x", "authorize_operation": "file_operations.write_file"}, wantErr: errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &UserCollaboration{TTL: time.Minute}
			sink := &grantSink{askSink: askSink{answer: func(tools.Question) (string, error) { return tt.answer, nil }}, conv: "conv"}
			g := sink
			res, err := u.Run(context.Background(), &tools.Call{ConversationID: "conv", Args: tt.args}, sink)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Text, tt.wantText) {
				t.Fatalf("text = %q, want %q", res.Text, tt.wantText)
			}
			if (len(g.got) == 1) != tt.wantGrant {
				t.Fatalf("grants = %+v", g.got)
			}
			if tt.wantGrant {
				gr := g.got[0]
				if !gr.Once || gr.Scope.Tool != "file_operations" || gr.Scope.Operation != "write_file" || gr.ConversationID != "conv" || gr.GrantedBy != "user_collaboration" ||
					gr.Scope.Arguments != `{"content":"x","path":"/etc/x"}` {
					t.Fatalf("grant = %+v", gr)
				}
				if q := sink.asked[0]; !q.Approval || !strings.Contains(q.Prompt, `once within 1m0s with exactly these arguments: {"content":"x","path":"/etc/x"}`) ||
					q.AuthorizeArguments != `{"content":"x","path":"/etc/x"}` {
					t.Fatalf("question = %+v: the person must see exactly what is granted", q)
				}
			}
		})
	}
}

func TestUserCollaborationWithoutAsker(t *testing.T) {
	u := &UserCollaboration{}
	_, err := u.Run(context.Background(), &tools.Call{Args: map[string]any{"prompt": "?"}}, plainSink{})
	if !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestJudge(t *testing.T) {
	for _, tt := range []struct {
		in                string
		approved, decided bool
	}{
		{"yes", true, true}, {"Y", true, true}, {"OK!", true, true}, {"go ahead", true, true}, {" Yes. ", true, true},
		{"yes, but only go test", false, false}, {"yes and also delete the rest", false, false}, {"ok but not that", false, false},
		{"No.", false, true}, {"don't", false, true}, {"cancel that", false, true},
		{"yesterday", false, false}, {"nope", false, false}, {"", false, false}, {"maybe", false, false},
	} {
		a, d := judge(tt.in)
		if a != tt.approved || d != tt.decided {
			t.Errorf("judge(%q) = %v,%v; want %v,%v", tt.in, a, d, tt.approved, tt.decided)
		}
	}
}
