package authz_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/authz"
)

// Running one call outside the sandbox (issue 25 items 6 and 7): the model
// asking for it, or a command the sandbox would refuse, asks a person in
// every mode, once, judged as the boundary; no grant covers it; without any
// sandbox layer the request changes nothing.
func TestOneCallOutsideSandbox(t *testing.T) {
	f := bypassFixture(t)
	e := f.containedEngine(t, nil)
	const A, Q, D = authz.Allow, authz.Ask, authz.Deny
	cases := []struct {
		line            string
		asked           bool // Effect.OutsideSandbox
		yolo, auto, ask authz.Decision
		outside         bool // the ask is the outside-sandbox kind
		reason          string
	}{
		{"ls", true, Q, Q, Q, true, "the model asks"},
		{"echo x > {out}/canary", true, Q, Q, Q, true, "outside the workspace"},
		{"python3 -c 'import os; os.system(\"rm -rf ~\")'", true, Q, Q, Q, true, "code"},
		{"rm -rf ~", true, D, D, D, false, "outside toold's sandbox"},
		// Not asked for: the sandbox refuses the write; AUTO and ASK ask
		// to run it outside, YOLO runs it inside (where it fails).
		{"echo x > {out}/canary", false, A, Q, Q, true, "which the sandbox refuses"},
		{"ls", false, A, A, Q, false, ""},
	}
	for _, c := range cases {
		for _, m := range []struct {
			mode authz.Mode
			want authz.Decision
		}{{yolo, c.yolo}, {auto, c.auto}, {ask, c.ask}} {
			req := runReq(m.mode, f.expand(c.line))
			req.Effect.OutsideSandbox = c.asked
			v := authorize(t, e, req)
			if v.Decision != m.want {
				t.Errorf("%s %q (asked %v): %s (%s: %s), want %s", m.mode, c.line, c.asked, v.Decision, v.Rule, v.Reason, m.want)
				continue
			}
			if v.Decision == Q && v.OutsideSandbox != c.outside {
				t.Errorf("%s %q (asked %v): OutsideSandbox %v, want %v (%s)", m.mode, c.line, c.asked, v.OutsideSandbox, c.outside, v.Reason)
			}
			if v.Decision == A && v.OutsideSandbox {
				t.Errorf("%s %q: allowed outside the sandbox without a person", m.mode, c.line)
			}
			if v.Decision != A && c.reason != "" && !strings.Contains(v.Reason, c.reason) {
				t.Errorf("%s %q: reason %q lacks %q", m.mode, c.line, v.Reason, c.reason)
			}
			if v.OutsideSandbox {
				if v.Rule != "builtin:outside-sandbox" || len(v.Scopes) != 1 || v.Scopes[0].Conversation || !strings.Contains(v.Scopes[0].Description, "OUTSIDE the sandbox") {
					t.Errorf("%s %q: rule %s, scopes %+v: want once only", m.mode, c.line, v.Rule, v.Scopes)
				}
			}
		}
	}

	// A conversation grant for the command does not cover it outside.
	if _, err := e.Grant("conv", authz.Scope{Conversation: true, Tool: "run_command", Operation: "run_command", CommandPrefix: "ls"}, false, time.Minute, "test"); err != nil {
		t.Fatal(err)
	}
	req := runReq(auto, "ls")
	req.Effect.OutsideSandbox = true
	if v := authorize(t, e, req); v.Decision != Q || !v.OutsideSandbox || v.Grant != nil {
		t.Errorf("a grant covered a call outside the sandbox: %s %s grant %v", v.Decision, v.Rule, v.Grant)
	}
	// A tool that cannot run its command outside (keys typed into a
	// sandboxed terminal session) asks as usual about a write outside.
	typed := cmdReq(auto, f.expand("echo x > {out}/canary\n"))
	typed.Effect.Interactive = true
	if v := authorize(t, e, typed); v.Decision != Q || v.OutsideSandbox || v.Rule != "builtin:outside-write" {
		t.Errorf("typed into a session: %s %s outside %v", v.Decision, v.Rule, v.OutsideSandbox)
	}

	// The toolctl hook's question (a command the agent runs itself) is not
	// a request to leave toold's sandbox.
	hook := runReq(auto, f.expand("echo x > {out}/canary"))
	if v, err := authz.OutsideSandbox(e).Explain(t.Context(), hook); err != nil || v.OutsideSandbox || v.Rule != "builtin:outside-write" {
		t.Errorf("hook explain: %+v %v", v, err)
	}

	// Where only the writes layer holds (Landlock in a container without
	// namespaces), a write outside asks to leave it too, in every mode (the
	// judge is the boundary for the rest); a delete inside asks as usual.
	wf := bypassFixture(t)
	writesOnly, err := authz.NewEngine(authz.EngineConfig{Workspace: wf.w, Home: wf.home, Containment: authz.Containment{Writes: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []authz.Mode{yolo, auto, ask} {
		if v := authorize(t, writesOnly, runReq(m, wf.expand("echo x > {out}/canary"))); v.Decision != Q || !v.OutsideSandbox {
			t.Errorf("writes only, %s: %s %s outside %v", m, v.Decision, v.Rule, v.OutsideSandbox)
		}
	}
	if v := authorize(t, writesOnly, runReq(auto, "rm -f x")); v.Decision != Q || v.OutsideSandbox {
		t.Errorf("writes only, a delete inside: %s %s outside %v", v.Decision, v.Rule, v.OutsideSandbox)
	}

	// Without any sandbox layer there is nothing to leave: judged as usual.
	plain := f.engine(t, nil, nil)
	req = runReq(yolo, "ls")
	req.Effect.OutsideSandbox = true
	if v := authorize(t, plain, req); v.Decision != A || v.OutsideSandbox {
		t.Errorf("no sandbox: %s %s outside %v", v.Decision, v.Rule, v.OutsideSandbox)
	}
}

// runReq is a run_command call: its tool can run the command outside the
// sandbox once a person approves.
func runReq(mode authz.Mode, line string) *authz.Request {
	r := cmdReq(mode, line)
	r.Effect.CanLeaveSandbox = true
	return r
}
