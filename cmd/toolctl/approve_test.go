package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/tools"
)

// fakeAuthz is a func-field fake policy. decide judges every call (allow
// when nil); an ask is allowed instead when a grant of the call's
// conversation covers its tool (a once grant is used up by Authorize, not
// by Explain). It keeps grants as authz.Granter and explains with decide.
type fakeAuthz struct {
	decide func(*authz.Request) authz.Verdict

	mu     sync.Mutex
	seq    int
	grants []authz.Grant
}

var (
	_ authz.Authorizer = (*fakeAuthz)(nil)
	_ authz.Granter    = (*fakeAuthz)(nil)
	_ authz.Explainer  = (*fakeAuthz)(nil)
)

func (f *fakeAuthz) Authorize(_ context.Context, r *authz.Request) (authz.Verdict, error) {
	return f.verdict(r, true), nil
}

func (f *fakeAuthz) Explain(_ context.Context, r *authz.Request) (authz.Verdict, error) {
	return f.verdict(r, false), nil
}

func (f *fakeAuthz) verdict(r *authz.Request, use bool) authz.Verdict {
	v := authz.Verdict{Decision: authz.Allow, Reason: "no rule", Risk: r.Risk}
	if f.decide != nil {
		v = f.decide(r)
	}
	if v.Decision != authz.Ask {
		return v
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, g := range f.grants {
		if g.ConversationID == r.ConversationID && g.Scope.Tool == r.Tool {
			if use && g.Once {
				f.grants = append(f.grants[:i], f.grants[i+1:]...)
			}
			v.Decision, v.Reason, v.Grant = authz.Allow, "a grant allows it", &g
			return v
		}
	}
	return v
}

func (f *fakeAuthz) Grant(conv string, s authz.Scope, once bool, ttl time.Duration, by string) (authz.Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	now := time.Now()
	g := authz.Grant{ID: fmt.Sprintf("g-%d", f.seq), ConversationID: conv, Scope: s, Once: once, CreatedAt: now, ExpiresAt: now.Add(ttl), GrantedBy: by}
	f.grants = append(f.grants, g)
	return g, nil
}

func (f *fakeAuthz) Grants(conv string) []authz.Grant {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []authz.Grant
	for _, g := range f.grants {
		if conv == "" || g.ConversationID == conv {
			out = append(out, g)
		}
	}
	return out
}

func (f *fakeAuthz) Revoke(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, g := range f.grants {
		if g.ID == id {
			f.grants = append(f.grants[:i], f.grants[i+1:]...)
			return true
		}
	}
	return false
}

// guardPolicy judges the "guarded" tool by its command line, split at &&
// into sub-commands: rm asks, shutdown is denied, the rest is allowed; the
// strictest wins. Every other tool is allowed.
func guardPolicy(r *authz.Request) authz.Verdict {
	if r.Tool != "guarded" {
		return authz.Verdict{Decision: authz.Allow, Reason: "not guarded", Risk: r.Risk}
	}
	v := authz.Verdict{Decision: authz.Allow, Reason: "every sub-command is allowed", Risk: tools.RiskHigh, Summary: "Run guarded: " + r.Effect.Command}
	for part := range strings.SplitSeq(r.Effect.Command, "&&") {
		pc := authz.ParsedCommand{Args: strings.Fields(part), Decision: "allow", Rule: "allow-rest"}
		if len(pc.Args) == 0 {
			continue
		}
		if len(pc.Args) > 1 && pc.Args[0] == "sudo" {
			pc.Wrappers, pc.Args = []string{"sudo"}, pc.Args[1:]
		}
		d := authz.Allow
		switch pc.Args[0] {
		case "rm":
			pc.Decision, pc.Rule, d = "ask", "ask-rm", authz.Ask
		case "shutdown":
			pc.Decision, pc.Rule, d = "deny", "deny-shutdown", authz.Deny
		}
		if d > v.Decision {
			v.Decision, v.Rule = d, pc.Rule
			v.Reason = map[authz.Decision]string{authz.Ask: "rm deletes files", authz.Deny: "shutdown is never allowed"}[d]
		}
		v.Commands = append(v.Commands, pc)
	}
	if v.Decision == authz.Ask {
		v.Scopes = []authz.Scope{
			{ID: "once", Tool: "guarded", Operation: "guarded", Description: "this call only"},
			{ID: "conv", Conversation: true, Tool: "guarded", Operation: "guarded", PathPrefix: "src/", TTL: 5 * time.Minute, Description: "guarded under src/ for 5m"},
		}
	}
	return v
}

// guardedTool runs a "command" (it only says so), writes src/main.go, and
// previews a long diff.
type guardedTool struct {
	ran atomic.Int32
}

var (
	_ tools.Tool      = (*guardedTool)(nil)
	_ tools.Previewer = (*guardedTool)(nil)
)

func (g *guardedTool) Spec() tools.Spec {
	schema := `{"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false}`
	return tools.Spec{Name: "guarded", Description: "A guarded test tool.", Source: "builtin", Operations: []tools.OperationSpec{{
		Name: "guarded", Description: "A guarded test tool.", Risk: tools.RiskHigh, Schema: json.RawMessage(schema),
	}}}
}

func (g *guardedTool) Describe(c *tools.Call) tools.Effect {
	cmd, _ := c.Args["command"].(string)
	return tools.Effect{Display: "Guarding: " + cmd, Command: cmd, Writes: []string{"src/main.go"}, Hosts: []string{"example.com"}}
}

// guardedDiff is the preview: 3 header lines and 45 added lines.
var guardedDiff = func() string {
	var b strings.Builder
	b.WriteString("--- a/src/main.go\n+++ b/src/main.go\n@@ -0,0 +1,45 @@\n")
	for i := range 45 {
		fmt.Fprintf(&b, "+line %d\n", i+1)
	}
	return b.String()
}()

func (g *guardedTool) Preview(context.Context, *tools.Call) (string, error) { return guardedDiff, nil }

func (g *guardedTool) Run(_ context.Context, c *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	g.ran.Add(1)
	cmd, _ := c.Args["command"].(string)
	return &tools.Result{Text: "ran: " + cmd}, nil
}

// startGuarded starts a real toold with guardPolicy as its policy (behind
// the returned fakeAuthz) and the guarded tool next to the test tools.
func startGuarded(t *testing.T) (*daemontest.Daemon, *fakeAuthz, *guardedTool) {
	t.Helper()
	pol := &fakeAuthz{decide: guardPolicy}
	d := startDaemon(t, nil, nil, daemontest.WithAuthorizer(pol, authz.Capabilities{Granter: pol, Explainer: pol}))
	g := &guardedTool{}
	if err := d.Main.Registry().Register(g); err != nil {
		t.Fatal(err)
	}
	return d, pol, g
}

// TestCallApprovalNoTerminal runs calls that need approval without a
// terminal: --yes approves once, without it the call is denied with a
// reason that says what to do; questions need --answer.
func TestCallApprovalNoTerminal(t *testing.T) {
	t.Parallel()
	d, pol, g := startGuarded(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		errHas []string
	}{
		{name: "yes approves once", args: []string{"guarded", "command=rm -rf build", "--yes"},
			stdout: "ran: rm -rf build\n", errHas: []string{
				"approval needed (high risk): Run guarded: rm -rf build",
				"reason:   rm deletes files (rule ask-rm)",
				"ask   rm -rf build  rule ask-rm",
				"    +line 37\n    … 8 more lines\n",
				"approved once (--yes)",
			}},
		{name: "allowed calls ask nothing", args: []string{"guarded", "command=ls"}, stdout: "ran: ls\n"},
		{name: "denied without a terminal", args: []string{"guarded", "command=rm -rf build"}, code: exitFailure,
			errHas: []string{
				"approval needed (high risk)",
				"denied: no terminal to ask on; pass --yes to approve once, or run toolctl interactively",
				"error: REJECTED_BY_USER: the user rejected this call: " + noTerminalReason,
			}},
		{name: "denied by policy", args: []string{"guarded", "command=shutdown now", "--yes"}, code: exitFailure,
			errHas: []string{"error: DENIED: ", "shutdown is never allowed", "rule: deny-shutdown"}},
		{name: "question answered", args: []string{"user_collaboration", "prompt=Which branch?", `choices:=["main","dev"]`, "--answer", "dev"},
			errHas: []string{"question: Which branch?\n  1) main\n  2) dev\nanswered (--answer): dev"}},
		{name: "question without a terminal", args: []string{"user_collaboration", "prompt=Which branch?"}, code: exitFailure,
			errHas: []string{"question: Which branch?", "canceling the call: no terminal to ask on; pass --answer TEXT", "error: CANCELED: "}},
		{name: "question with yes", args: []string{"user_collaboration", "prompt=Which branch?", "--yes"}, code: exitFailure,
			errHas: []string{"canceling the call: --yes answers no questions; pass --answer TEXT", "error: CANCELED: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runAt(t, d.Socket, append([]string{"call"}, tt.args...)...)
			r.check(t, tt.code, nil, tt.errHas)
			if tt.stdout != "" && r.stdout != tt.stdout {
				t.Errorf("stdout %q, want %q", r.stdout, tt.stdout)
			}
		})
	}
	if n := g.ran.Load(); n != 2 {
		t.Errorf("the guarded tool ran %d times, want 2 (approved once, allowed)", n)
	}
	if gs := pol.Grants(""); len(gs) != 0 {
		t.Errorf("grants %v, want none", gs)
	}
	t.Run("question answered, json", func(t *testing.T) {
		r := runAt(t, d.Socket, "call", "user_collaboration", "prompt=Which branch?", "--answer", "main", "--json")
		r.check(t, exitOK, []string{`"User response: main"`}, []string{"answered (--answer): main"})
		for line := range strings.Lines(r.stdout) {
			if err := protojson.Unmarshal([]byte(line), &pb.ServerEvent{}); err != nil {
				t.Errorf("stdout line is not a ServerEvent: %v\n%s", err, line)
			}
		}
	})
}

// scriptedPrompter is a person who presses keys and types lines, in order;
// then waits for ctx. A line "EOF" ends the input.
type scriptedPrompter struct {
	keys  string
	lines []string
	out   io.Writer
}

func (s *scriptedPrompter) key(ctx context.Context, prompt string) (byte, error) {
	_, _ = io.WriteString(s.out, prompt)
	if s.keys == "" {
		<-ctx.Done()
		return 0, context.Cause(ctx)
	}
	k := s.keys[0]
	s.keys = s.keys[1:]
	return k, nil
}

func (s *scriptedPrompter) line(ctx context.Context, prompt string) (string, error) {
	_, _ = io.WriteString(s.out, prompt)
	if len(s.lines) == 0 {
		<-ctx.Done()
		return "", context.Cause(ctx)
	}
	l := s.lines[0]
	s.lines = s.lines[1:]
	if l == "EOF" {
		return "", io.EOF
	}
	return l, nil
}

var (
	onceScopePB = &pb.ApprovalScope{ScopeId: "once", Kind: pb.ApprovalScope_KIND_ONCE, Tool: "guarded", Description: "this call only"}
	convScopePB = &pb.ApprovalScope{ScopeId: "conv", Kind: pb.ApprovalScope_KIND_CONVERSATION, Tool: "guarded", PathPrefix: "src/",
		Ttl: durationpb.New(5 * time.Minute), Description: "guarded under src/ for 5m"}
	conv2ScopePB = &pb.ApprovalScope{ScopeId: "conv2", Kind: pb.ApprovalScope_KIND_CONVERSATION, Tool: "guarded", CommandPrefix: "rm",
		Ttl: durationpb.New(time.Minute)}
)

// TestPersonAsker checks the keys of the approval prompt.
func TestPersonAsker(t *testing.T) {
	t.Parallel()
	approval := func(scopes ...*pb.ApprovalScope) *pb.RequiresApproval {
		return &pb.RequiresApproval{ApprovalId: "ap", Risk: pb.RiskLevel_RISK_LEVEL_HIGH, Reason: "rm deletes files", Rule: "ask-rm",
			Effect: &pb.Effect{Summary: "Run guarded", Command: "rm -rf build"}, Scopes: scopes}
	}
	approve := func(scope string) *pb.ApprovalDecision {
		return &pb.ApprovalDecision{ApprovalId: "ap", Approve: true, ScopeId: scope}
	}
	deny := func(reason string) *pb.ApprovalDecision {
		return &pb.ApprovalDecision{ApprovalId: "ap", Reason: reason}
	}
	tests := []struct {
		name     string
		req      *pb.RequiresApproval
		keys     string
		lines    []string
		canceled bool
		oneShot  bool
		want     *pb.ApprovalDecision
		wantErr  error
		outHas   []string
		outLacks []string
	}{
		{name: "y approves once", req: approval(onceScopePB, convScopePB), keys: "y", want: approve("once"),
			outHas: []string{"[y] once  [a] for this conversation: guarded under src/ for 5m  [n] deny\napprove? y\n✓ approved once\n"}},
		{name: "Y approves once", req: approval(onceScopePB, convScopePB), keys: "Y", want: approve("once")},
		{name: "other keys ask again", req: approval(onceScopePB, convScopePB), keys: "x\n y", want: approve("once"),
			outHas: []string{"approve? \npress y, a or n\napprove? \npress y, a or n\napprove? \npress y, a or n\napprove? y\n"}},
		{name: "a approves for the conversation", req: approval(onceScopePB, convScopePB), keys: "a", want: approve("conv"),
			outHas: []string{"approve? a\n✓ approved for this conversation: guarded under src/ for 5m\n"}},
		{name: "a picks among scopes", req: approval(onceScopePB, convScopePB, conv2ScopePB), keys: "a2", want: approve("conv2"),
			outHas: []string{
				"[a] for this conversation (then pick one below)  [n] deny\n      1) guarded under src/ for 5m\n      2) guarded for commands starting with rm for 1m0s\n",
				"which? [1-2] 2\n✓ approved for this conversation: guarded for commands starting with rm for 1m0s\n",
			}},
		{name: "a with a wrong pick asks again", req: approval(onceScopePB, convScopePB, conv2ScopePB), keys: "a9a1", want: approve("conv"),
			outHas: []string{"which? [1-2] \nno such choice; press y, a or n\napprove? a\n"}},
		{name: "a without conversation scopes", req: approval(onceScopePB), keys: "ay", want: approve("once"),
			outHas: []string{"[y] once  [n] deny\n", "press y or n\n"}, outLacks: []string{"[a]"}},
		{name: "no once scope offered", req: approval(convScopePB), keys: "y", want: approve("")},
		{name: "a one-shot call offers no conversation scope", req: approval(onceScopePB, convScopePB), oneShot: true, keys: "ay", want: approve("once"),
			outHas: []string{"[y] once  [n] deny\n(no [a] for this conversation: it ends with this call; give --conversation ID", "press y or n\n"}, outLacks: []string{"for this conversation: guarded"}},
		{name: "n with a reason", req: approval(onceScopePB, convScopePB), keys: "n", lines: []string{"  not on a Friday "}, want: deny("not on a Friday"),
			outHas: []string{"approve? n\nreason (optional): ✗ denied: not on a Friday\n"}},
		{name: "n without a reason", req: approval(onceScopePB), keys: "N", lines: []string{""}, want: deny(""),
			outHas: []string{"✗ denied\n"}},
		{name: "n and end of input", req: approval(onceScopePB), keys: "n", lines: []string{"EOF"}, want: deny("")},
		{name: "interrupted", req: approval(onceScopePB), canceled: true, wantErr: context.Canceled},
		{name: "interrupted at the reason", req: approval(onceScopePB), keys: "n", canceled: true, wantErr: context.Canceled},
		{name: "expired", req: func() *pb.RequiresApproval {
			r := approval(onceScopePB)
			r.ExpiresAt = timestamppb.New(time.Now().Add(-time.Second))
			return r
		}(), wantErr: errApprovalExpired, outHas: []string{"expires:  ", "(in 0s)", "✗ the approval request expired"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			p := &personAsker{in: &scriptedPrompter{keys: tt.keys, lines: tt.lines, out: &out}, out: &out, now: time.Now}
			ctx, cancel := context.WithCancel(t.Context())
			if tt.canceled {
				cancel()
			}
			defer cancel()
			got, err := p.approve(ctx, askInfo{callID: "c", oneShot: tt.oneShot}, tt.req)
			if !errors.Is(err, tt.wantErr) || !proto.Equal(got, tt.want) {
				t.Errorf("got %v, %v; want %v, %v", got, err, tt.want, tt.wantErr)
			}
			for _, s := range tt.outHas {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tt.outLacks {
				if strings.Contains(out.String(), s) {
					t.Errorf("output has %q:\n%s", s, out.String())
				}
			}
		})
	}
}

// TestPersonAskerAnswer checks how questions are answered.
func TestPersonAskerAnswer(t *testing.T) {
	t.Parallel()
	q := &pb.InputRequired{RequestId: "q", Prompt: "Which branch?\nThe tests run there.", Choices: []string{"main", "dev"}}
	tests := []struct {
		name    string
		req     *pb.InputRequired
		lines   []string
		want    string
		wantErr bool
		outHas  string
	}{
		{name: "text", req: q, lines: []string{" release "}, want: "release",
			outHas: "question: Which branch?\n  The tests run there.\n  1) main\n  2) dev\nanswer: "},
		{name: "choice by number", req: q, lines: []string{"2"}, want: "dev"},
		{name: "number beyond the choices", req: q, lines: []string{"3"}, want: "3"},
		{name: "empty asks again", req: q, lines: []string{"", "main"}, want: "main", outHas: "an answer is needed (Ctrl-C cancels the call)\nanswer: "},
		{name: "approval question", req: &pb.InputRequired{Prompt: "Push?", Approval: true, AuthorizeOperation: "git.push", AuthorizeArgumentsJson: `{"remote":"origin"}`}, lines: []string{"yes"}, want: "yes",
			outHas: "question: Push?\n  (a yes or no question; yes lets the agent run git.push once with exactly {\"remote\":\"origin\"})\n"},
		{name: "end of input", req: q, lines: []string{"EOF"}, wantErr: true},
		{name: "interrupted", req: q, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			p := &personAsker{in: &scriptedPrompter{lines: tt.lines, out: &out}, out: &out, now: time.Now}
			ctx, cancel := context.WithCancel(t.Context())
			if tt.lines == nil {
				cancel()
			}
			defer cancel()
			got, err := p.answer(ctx, askInfo{callID: "c"}, tt.req)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("got %q, %v; want %q (error: %t)", got, err, tt.want, tt.wantErr)
			}
			if !strings.Contains(out.String(), tt.outHas) {
				t.Errorf("output lacks %q:\n%s", tt.outHas, out.String())
			}
		})
	}
}

// TestApprovalText checks the approval as shown: every part, aligned, the
// diff cut, and colors only when asked for.
func TestApprovalText(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.Local)
	req := &pb.RequiresApproval{
		ApprovalId: "ap",
		Risk:       pb.RiskLevel_RISK_LEVEL_MEDIUM,
		Reason:     "rm deletes files",
		Rule:       "ask-rm",
		Effect: &pb.Effect{
			Summary: "Run guarded",
			Command: "git status && sudo rm -rf 'my build' > log",
			Commands: []*pb.ParsedCommand{
				{Args: []string{"git", "status"}, Decision: "allow"},
				{Args: []string{"rm", "-rf", "my build"}, Wrappers: []string{"sudo"}, Redirects: []string{"log"}, Decision: "ask", Rule: "ask-rm"},
			},
			Reads:  []string{"a.txt", "b.txt"},
			Writes: []string{"log"},
			Hosts:  []string{"example.com"},
			Diff:   guardedDiff,
		},
		ExpiresAt: timestamppb.New(now.Add(90 * time.Second)),
	}
	got := approvalText(req, style{}, now)
	want := `approval needed (medium risk): Run guarded
  reason:   rm deletes files (rule ask-rm)
  command:  git status && sudo rm -rf 'my build' > log
            allow git status
            ask   rm -rf 'my build'  rule ask-rm · via sudo · > log
  reads:    a.txt, b.txt
  writes:   log
  hosts:    example.com
  diff:
    --- a/src/main.go
    +++ b/src/main.go
    @@ -0,0 +1,45 @@
`
	for i := range 37 {
		want += fmt.Sprintf("    +line %d\n", i+1)
	}
	want += "    … 8 more lines\n  expires:  12:00:00 (in 1m30s)\n"
	want = strings.Replace(want, "12:00:00", now.Add(90*time.Second).Format("15:04:05"), 1)
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	colored := approvalText(req, style{color: true}, now)
	for _, s := range []string{"\x1b[1;33mapproval needed\x1b[0m", "\x1b[33mmedium risk\x1b[0m", "\x1b[32mallow\x1b[0m", "\x1b[33mask\x1b[0m   rm",
		"\x1b[32m+line 1\x1b[0m", "\x1b[36m@@ -0,0 +1,45 @@\x1b[0m"} {
		if !strings.Contains(colored, s) {
			t.Errorf("colored text lacks %q:\n%s", s, colored)
		}
	}
}

// TestScopeText checks scopes described by toold and built from fields.
func TestScopeText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scope *pb.ApprovalScope
		want  string
	}{
		{convScopePB, "guarded under src/ for 5m"},
		{conv2ScopePB, "guarded for commands starting with rm for 1m0s"},
		{&pb.ApprovalScope{Kind: pb.ApprovalScope_KIND_ONCE, Tool: "file_operations", Operation: "write_file"}, "file_operations.write_file, this call only"},
		{&pb.ApprovalScope{Kind: pb.ApprovalScope_KIND_CONVERSATION, Tool: "x", Operation: "x", PathPrefix: "/tmp/"}, "x under /tmp/"},
	}
	for _, tt := range tests {
		if got := scopeText(tt.scope); got != tt.want {
			t.Errorf("scopeText(%v) = %q, want %q", tt.scope, got, tt.want)
		}
	}
}

func TestShellJoin(t *testing.T) {
	t.Parallel()
	got := shellJoin([]string{"echo", "a b", "it's", "", "--x=1", "$HOME"})
	want := `echo 'a b' 'it'\''s' '' --x=1 '$HOME'`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
