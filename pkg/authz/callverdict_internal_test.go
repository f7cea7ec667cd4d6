package authz

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// callPolicies are the policies the kept verdicts are checked under: the
// built-in one, the examples, a hand-written one with call rules of every
// kind (with and without arguments), and random ones.
func callPolicies(t *testing.T) map[string]*Policy {
	t.Helper()
	ps := map[string]*Policy{"builtin": DefaultPolicy()}
	for _, f := range []string{"../../examples/policy.yaml", "../../examples/policy.toml"} {
		p, err := LoadPolicy(f)
		if err != nil {
			t.Fatal(err)
		}
		ps[filepath.Base(f)] = p
	}
	p, err := ParsePolicy([]byte(`
rules:
  - {name: think-secret, decision: deny, tool: think, args: {thought: "*password*"}}
  - {name: memory-asks, decision: ask, tool: memory}
  - {name: todo-allowed, decision: allow, tool: "todo*"}
  - {name: mcp-delete, decision: deny, tool: "mcp__*", operation: "*delete*"}
  - {name: web-internal, decision: ask, tool: web, operation: search, args: {query: "*internal*"}}
  - {name: everything-allowed, decision: allow, tool: everything__echo}
  - {name: push, decision: ask, commands: ["git push"]}
  - {name: etc, decision: deny, paths: ["/etc/**"]}
`), "yaml", "calls")
	if err != nil {
		t.Fatal(err)
	}
	ps["calls"] = p
	rng := rand.New(rand.NewPCG(27, 6))
	pick := func(ss ...string) string { return ss[rng.IntN(len(ss))] }
	for i := range 16 {
		var f PolicyFile
		off := false
		if i%2 == 1 {
			f.BuiltinRules = &off
		}
		for j := range rng.IntN(6) {
			r := RuleSpec{Name: fmt.Sprintf("r%d", j), Decision: pick("allow", "ask", "deny")}
			if rng.IntN(3) > 0 {
				r.Tool = StringList{pick("think", "t*", "memory", "mcp__*", "*", "todo_write|think")}
			}
			if rng.IntN(2) == 0 {
				r.Operation = StringList{pick("think", "store", "*delete*", "search", "*")}
			}
			if rng.IntN(3) == 0 {
				r.Args = map[string]string{pick("thought", "query", "key"): pick("*x*", "secret", "*")}
			}
			switch rng.IntN(6) {
			case 0:
				r.Commands = []string{"rm"}
			case 1:
				r.Paths = []string{"**/*.go"}
			case 2:
				r.Hosts = []string{"example.com"}
			}
			f.Rules = append(f.Rules, r)
		}
		p, err := compilePolicy(f, fmt.Sprintf("random%d", i), "")
		if err != nil {
			t.Fatalf("random policy %d: %v", i, err)
		}
		ps[p.source] = p
	}
	return ps
}

// TestCallVerdictsAgree compares the verdict Authorize and Explain return
// for plain calls (kept or not) with the whole judge's, field for field,
// under every policy above, in every mode and at every risk, for calls
// whose arguments a rule reads and calls whose they do not, before and
// after a verdict is kept, and with a conversation grant that lifts asks.
func TestCallVerdictsAgree(t *testing.T) {
	base := t.TempDir()
	w, err := workspace.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	names := [][2]string{{"think", "think"}, {"memory", "store"}, {"memory", "search"}, {"todo_write", "todo_write"},
		{"mcp__fs__delete_file", "delete_file"}, {"web", "search"}, {"everything__echo", "echo"}, {"read_file", "read_file"}}
	argSets := []map[string]any{nil, {"thought": "a plan"}, {"thought": "the password is x"}, {"query": "internal docs"},
		{"key": "secret", "n": 3}}
	modes := []Mode{ModeUnset, ModeYOLO, ModeAuto, ModeAsk}
	risks := []tools.Risk{tools.RiskUnknown, tools.RiskLow, tools.RiskMedium, tools.RiskHigh}
	kept := 0
	for name, pol := range callPolicies(t) {
		now := time.Unix(1_800_000_000, 0)
		e, err := NewEngine(EngineConfig{Workspace: w, Policy: pol, Home: base, Clock: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		// A grant of one tool in conversation "g": it lifts asks there.
		if _, err := e.Grant("g", Scope{Tool: "memory"}, false, time.Hour, "test"); err != nil {
			t.Fatal(err)
		}
		for round := range 2 { // the first judges and keeps, the second uses what was kept
			for _, n := range names {
				for ai, args := range argSets {
					for _, mode := range modes {
						for ri, risk := range risks {
							for _, conv := range []string{"c", "g"} {
								// Half the calls show a display of their own
								// (Verdict.Summary is made per call).
								display := ""
								if (ai+ri+round)%2 == 1 {
									display = "Thinking"
								}
								req := &Request{ConversationID: conv, CallID: "1", Mode: mode, Tool: n[0], Operation: n[1],
									Args: args, Risk: risk, Effect: tools.Effect{Display: display, Risk: risk}}
								want := e.decide(req, false)
								got, err := e.Authorize(t.Context(), req)
								if err != nil {
									t.Fatal(err)
								}
								explained, err := e.Explain(t.Context(), req)
								if err != nil {
									t.Fatal(err)
								}
								if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(explained, want) {
									t.Fatalf("policy %s, round %d, %+v:\nAuthorize %+v\nExplain   %+v\njudge     %+v", name, round, req, got, explained, want)
								}
							}
						}
					}
				}
			}
		}
		e.kept.m.Range(func(_, v any) bool {
			if v.(*callVerdict).keep {
				kept++
			}
			return true
		})
	}
	if kept == 0 {
		t.Fatal("no verdict was kept: the fast path was not exercised")
	}
}

// TestCallVerdictsNotForEffects: a call with anything to judge part by part
// is never kept.
func TestCallVerdictsNotForEffects(t *testing.T) {
	for _, ef := range []tools.Effect{
		{Reads: []string{"a"}}, {Writes: []string{"a"}}, {Command: "true"}, {Dir: "."}, {Interactive: true},
		{Unknown: "x"}, {Env: map[string]string{"A": "b"}}, {OutsideSandbox: true}, {CanLeaveSandbox: true},
		{Hosts: []string{"example.com"}},
	} {
		if plainCall(&Request{Effect: ef}) {
			t.Errorf("%+v is plain", ef)
		}
	}
	if plainCall(&Request{OutsideSandbox: true}) || plainCall(&Request{Dir: "/x"}) {
		t.Error("a request outside the sandbox or with a directory is plain")
	}
	if !plainCall(&Request{Effect: tools.Effect{Display: "Thinking", Risk: tools.RiskLow}}) {
		t.Error("think is not plain")
	}
}

// TestPlainCallKnowsEffect fails when tools.Effect gains a field: plainCall
// must then say whether a call with it is still plain.
func TestPlainCallKnowsEffect(t *testing.T) {
	known := []string{"Display", "Risk", "Reads", "Writes", "Command", "Dir", "Interactive", "Unknown", "Env",
		"OutsideSandbox", "CanLeaveSandbox", "Hosts"}
	var got []string
	for f := range reflect.TypeFor[tools.Effect]().Fields() {
		got = append(got, f.Name)
	}
	if !reflect.DeepEqual(got, known) {
		t.Fatalf("tools.Effect has fields %v, plainCall knows %v: look at plainCall (callverdict.go)", got, known)
	}
	req := reflect.TypeFor[Request]()
	var rf []string
	for f := range req.Fields() {
		rf = append(rf, f.Name)
	}
	if want := []string{"ConversationID", "CallID", "Mode", "Tool", "Operation", "Args", "Effect", "Risk", "Dir", "OutsideSandbox"}; !reflect.DeepEqual(rf, want) {
		t.Fatalf("authz.Request has fields %v, plainCall knows %v: look at plainCall (callverdict.go)", rf, want)
	}
}
