package authz_test

import (
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools"
)

func fetchReq(mode authz.Mode, host string) *authz.Request {
	return &authz.Request{ConversationID: "c1", Mode: mode, Tool: "web_operations", Operation: "web_fetch",
		Risk: tools.RiskMedium, Effect: tools.Effect{Hosts: []string{host}}}
}

// TestHostScope: in AUTO a fetch of a host no rule allows asks and offers
// "this host for the conversation"; the grant covers that host only, never
// another host, and never lifts a deny.
func TestHostScope(t *testing.T) {
	f := newFixture(t)
	p, err := authz.ParsePolicy([]byte(`rules:
  - name: docs
    decision: allow
    tool: web_operations
    hosts: ["*.go.dev", go.dev]
  - name: everything-else
    decision: allow
    tool: other_tool
    hosts: ["*"]
  - name: no-pastebins
    decision: deny
    hosts: ["pastebin.com"]
`), "yaml", "test")
	if err != nil {
		t.Fatal(err)
	}
	e := f.engine(t, p, nil)
	for host, want := range map[string]authz.Decision{
		"pkg.go.dev": authz.Allow, "go.dev": authz.Allow, "example.com": authz.Ask,
		"pastebin.com": authz.Deny, "169.254.169.254": authz.Deny, "metadata.google.internal": authz.Deny,
	} {
		if v := authorize(t, e, fetchReq(authz.ModeAuto, host)); v.Decision != want {
			t.Errorf("%s: %v (%s), want %v", host, v.Decision, v.Rule, want)
		}
	}
	v := authorize(t, e, fetchReq(authz.ModeAuto, "example.com"))
	var hostScope *authz.Scope
	for i, s := range v.Scopes {
		if s.Host == "example.com" && s.Conversation {
			hostScope = &v.Scopes[i]
		}
	}
	if hostScope == nil {
		t.Fatalf("scopes %+v offer no host scope", v.Scopes)
	}
	if hostScope.Description != "web_operations.web_fetch reaching host example.com, in this conversation for 5m0s (deny rules, sensitive paths and what asks in every mode still apply)" {
		t.Errorf("description %q", hostScope.Description)
	}
	if _, err := e.Grant("c1", *hostScope, false, 0, "test"); err != nil {
		t.Fatal(err)
	}
	if v := authorize(t, e, fetchReq(authz.ModeAuto, "example.com")); v.Decision != authz.Allow || v.Grant == nil {
		t.Errorf("granted host: %v %s", v.Decision, v.Rule)
	}
	for _, host := range []string{"evil.example.com", "example.org", "EXAMPLE.com.evil"} {
		if v := authorize(t, e, fetchReq(authz.ModeAuto, host)); v.Decision != authz.Ask {
			t.Errorf("%s after a grant for example.com: %v %s", host, v.Decision, v.Rule)
		}
	}
	// Another conversation has no grant.
	r := fetchReq(authz.ModeAuto, "example.com")
	r.ConversationID = "c2"
	if v := authorize(t, e, r); v.Decision != authz.Ask {
		t.Errorf("other conversation: %v", v.Decision)
	}
	// A host grant does not cover a command of run_command.
	cr := cmdReq(authz.ModeAuto, "curl https://example.com/")
	cr.ConversationID = "c1"
	if v := authorize(t, e, cr); v.Decision != authz.Ask {
		t.Errorf("command after a host grant: %v %s", v.Decision, v.Rule)
	}

	// HostRuleAllows: only an allow rule with hosts naming it, for the tool.
	for _, c := range []struct {
		tool, host string
		want       bool
	}{
		{"web_operations", "pkg.go.dev", true}, {"web_operations", "go.dev", true},
		{"web_operations", "example.com", false}, {"web_operations", "pastebin.com", false},
		{"other_tool", "go.dev", false}, {"web_operations", "169.254.169.254", false},
		{"other_tool", "10.0.0.1", false}, {"other_tool", "internal.corp", false},
	} {
		if got := e.HostRuleAllows(c.tool, "web_fetch", c.host); got != c.want {
			t.Errorf("HostRuleAllows(%s, %s) = %v", c.tool, c.host, got)
		}
	}
}
