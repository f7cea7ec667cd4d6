package collab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// recording is a sink whose person answers with answer and whose grants
// are recorded, as the executor's sink makes them.
type recording struct {
	asked []tools.Question
	got   []tools.GrantRequest
}

func (r *recording) sink(answer string) *tools.Sink {
	return &tools.Sink{
		Ask: func(_ context.Context, q tools.Question) (string, error) {
			r.asked = append(r.asked, q)
			return answer, nil
		},
		Grant: func(g tools.GrantRequest) (string, error) {
			r.got = append(r.got, g)
			return "g1", nil
		},
	}
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
			g := &recording{}
			res, err := u.Run(context.Background(), &tools.Call{ConversationID: "conv", Args: tt.args}, g.sink(tt.answer))
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
				if !gr.Once || gr.Tool != "file_operations" || gr.Operation != "write_file" || gr.By != "user_collaboration" ||
					gr.Arguments != `{"content":"x","path":"/etc/x"}` || gr.TTL != time.Minute {
					t.Fatalf("grant = %+v", gr)
				}
				if res.Structured["grant_id"] != "g1" {
					t.Fatalf("structured = %v", res.Structured)
				}
				if q := g.asked[0]; !q.Approval || !strings.Contains(q.Prompt, `once within 1m0s with exactly these arguments: {"content":"x","path":"/etc/x"}`) ||
					q.AuthorizeArguments != `{"content":"x","path":"/etc/x"}` {
					t.Fatalf("question = %+v: the person must see exactly what is granted", q)
				}
			}
		})
	}
}

// A sink without Ask (nobody can answer) or without Grant (no grants
// kept) refuses what needs them.
func TestUserCollaborationWithoutCapabilities(t *testing.T) {
	u := &UserCollaboration{}
	_, err := u.Run(context.Background(), &tools.Call{Args: map[string]any{"prompt": "?"}}, &tools.Sink{})
	if !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("without Ask: err = %v", err)
	}
	s := (&recording{}).sink("yes")
	s.Grant = nil
	_, err = u.Run(context.Background(), &tools.Call{Args: map[string]any{"prompt": "?", "require_approval": true,
		"authorize_operation": "file_operations.write_file", "authorize_arguments": map[string]any{"path": "x"}}}, s)
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("without Grant: err = %v", err)
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
