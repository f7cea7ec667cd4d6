package authz_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// fakeClock is a controllable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestModesAndRisk(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, nil, nil)
	think := func(m authz.Mode) *authz.Request {
		return &authz.Request{Mode: m, Tool: "think", Operation: "think", Risk: tools.RiskLow}
	}
	mcp := func(m authz.Mode) *authz.Request {
		return &authz.Request{Mode: m, Tool: "mcp_x", Operation: "mcp_x"}
	}
	fetch := func(m authz.Mode, host string) *authz.Request {
		return &authz.Request{Mode: m, Tool: "web_fetch", Operation: "web_fetch", Risk: tools.RiskLow, Effect: tools.Effect{Hosts: []string{host}}}
	}
	tests := []struct {
		name string
		req  *authz.Request
		want authz.Decision
		risk tools.Risk
		rule string
	}{
		{"think auto", think(authz.ModeAuto), authz.Allow, tools.RiskLow, "mode:auto"},
		{"think unset means auto", think(authz.ModeUnset), authz.Allow, tools.RiskLow, "mode:auto"},
		{"think ask", think(authz.ModeAsk), authz.Ask, tools.RiskLow, "mode:ask"},
		{"think yolo", think(authz.ModeYOLO), authz.Allow, tools.RiskLow, "mode:yolo"},
		{"unknown risk is high", mcp(authz.ModeAuto), authz.Ask, tools.RiskHigh, "mode:auto"},
		{"unknown risk yolo", mcp(authz.ModeYOLO), authz.Allow, tools.RiskHigh, "mode:yolo"},
		{"fetch low", fetch(authz.ModeAuto, "example.com"), authz.Allow, tools.RiskLow, "mode:auto"},
		{"fetch metadata", fetch(authz.ModeYOLO, "169.254.169.254"), authz.Deny, tools.RiskHigh, "builtin:cloud-metadata"},
		{"fetch metadata url", fetch(authz.ModeAuto, "http://[fd00:ec2::254]:80/x"), authz.Deny, tools.RiskHigh, "builtin:cloud-metadata"},
		{"read inside low", readReq(authz.ModeAuto, "src/main.go"), authz.Allow, tools.RiskLow, "mode:auto"},
		{"read outside high", readReq(authz.ModeAuto, "../out/file.txt"), authz.Ask, tools.RiskHigh, "mode:auto"},
		{"write inside medium", writeReq(authz.ModeAuto, "src/x.go"), authz.Ask, tools.RiskMedium, "mode:auto"},
		{"write outside high", writeReq(authz.ModeAuto, "../out/x"), authz.Ask, tools.RiskHigh, "builtin:outside-write"},
		{"delete inside keeps the base risk", &authz.Request{Mode: authz.ModeAuto, Tool: "file_operations", Operation: "delete_path",
			Risk: tools.RiskHigh, Effect: tools.Effect{Writes: []string{"src/main.go"}}}, authz.Ask, tools.RiskHigh, "mode:auto"},
		{"command high", cmdReq(authz.ModeAuto, "make"), authz.Ask, tools.RiskHigh, "mode:auto"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := authorize(t, e, tc.req)
			if v.Decision != tc.want || v.Risk != tc.risk || v.Rule != tc.rule {
				t.Fatalf("got %s risk %s rule %s (%s), want %s risk %s rule %s", v.Decision, v.Risk, v.Rule, v.Reason, tc.want, tc.risk, tc.rule)
			}
		})
	}
}

func TestAllowedCommandIsLowRisk(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, loadExample(t), nil)
	v := authorize(t, e, cmdReq(authz.ModeAuto, "git status && ls"))
	if v.Decision != authz.Allow || v.Risk != tools.RiskLow {
		t.Fatalf("got %s %s", v.Decision, v.Risk)
	}
}

func TestVerdictDetails(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, loadExample(t), nil)
	v := authorize(t, e, cmdReq(authz.ModeAuto, "git status && sudo -u bob timeout 10 git push origin main > ../out/log"))
	if v.Decision != authz.Ask {
		t.Fatalf("got %s", v.Decision)
	}
	if !strings.HasPrefix(v.Summary, "Run `git status && sudo") || !strings.Contains(v.Summary, "(2 commands)") || !strings.Contains(v.Summary, f.out+"/log") {
		t.Errorf("summary %q", v.Summary)
	}
	if len(v.Commands) != 2 {
		t.Fatalf("commands %+v", v.Commands)
	}
	c := v.Commands[1]
	if strings.Join(c.Args, " ") != "git push origin main" || strings.Join(c.Wrappers, "|") != "sudo -u bob|timeout 10" ||
		strings.Join(c.Redirects, "") != "> ../out/log" || c.Decision != "ask" {
		t.Errorf("command %+v", c)
	}
	if v.Commands[0].Decision != "allow" || v.Commands[0].Rule != "git-read-only" {
		t.Errorf("command %+v", v.Commands[0])
	}
	if len(v.Outside) != 1 || v.Outside[0] != f.out+"/log" {
		t.Errorf("outside %v", v.Outside)
	}
	// sudo is asked for each call: no conversation scope for it, but one
	// for the directory written outside.
	var got []string
	for _, s := range v.Scopes {
		got = append(got, s.ID+"="+s.CommandPrefix+s.PathPrefix)
	}
	if strings.Join(got, ",") != "once=,conversation-1="+f.out {
		t.Errorf("scopes %v", got)
	}
	if v.Rule != "builtin:privileged" || !strings.Contains(v.Reason, "raised privileges") {
		t.Errorf("rule %s reason %s", v.Rule, v.Reason)
	}
}

func TestScopes(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, loadExample(t), nil)
	v := authorize(t, e, cmdReq(authz.ModeAuto, "git push origin main && npm install x"))
	want := []authz.Scope{
		{ID: "once", Tool: "run_command", Operation: "run_command", Description: "this call only"},
		{ID: "conversation-1", Conversation: true, Tool: "run_command", Operation: "run_command", CommandPrefix: "git push", TTL: 300 * time.Second},
		{ID: "conversation-2", Conversation: true, Tool: "run_command", Operation: "run_command", CommandPrefix: "npm install", TTL: 300 * time.Second},
	}
	if len(v.Scopes) != len(want) {
		t.Fatalf("scopes %+v", v.Scopes)
	}
	for i, w := range want {
		s := v.Scopes[i]
		desc := s.Description
		s.Description, w.Description = "", ""
		if s != w {
			t.Errorf("scope %d: %+v, want %+v", i, s, w)
		}
		if i > 0 && !strings.Contains(desc, `"`+w.CommandPrefix+`"`) || i > 0 && !strings.Contains(desc, "5m0s") {
			t.Errorf("description %q", desc)
		}
	}
	// A write outside offers its directory; a path that cannot be judged
	// offers only once.
	v = authorize(t, e, writeReq(authz.ModeAuto, "../out/deep/new.txt"))
	if len(v.Scopes) != 2 || v.Scopes[1].PathPrefix != f.out+"/deep" {
		t.Errorf("scopes %+v", v.Scopes)
	}
	v = authorize(t, e, readReq(authz.ModeAuto, "README.md/x"))
	if v.Decision != authz.Ask || len(v.Scopes) != 1 {
		t.Errorf("%v, scopes %+v", v.Decision, v.Scopes)
	}
}

func TestConversationGrant(t *testing.T) {
	f := newFixture(t)
	clock := newClock()
	e := f.engine(t, loadExample(t), clock.Now)
	req := cmdReq(authz.ModeAuto, "git push origin main")
	v := authorize(t, e, req)
	if v.Decision != authz.Ask {
		t.Fatalf("got %s", v.Decision)
	}
	// The executor records the scope the person chose.
	g, err := e.Grant("conv", v.Scopes[1], false, v.Scopes[1].TTL, "client toolctl/0.1")
	if err != nil {
		t.Fatal(err)
	}
	if !g.ExpiresAt.Equal(clock.Now().Add(300*time.Second)) || g.Once || g.GrantedBy != "client toolctl/0.1" {
		t.Errorf("grant %+v", g)
	}
	tests := []struct {
		name string
		req  *authz.Request
		want authz.Decision
	}{
		{"same command", req, authz.Allow},
		{"other arguments", cmdReq(authz.ModeAuto, "git push -u origin feature"), authz.Allow},
		{"with allowed commands", cmdReq(authz.ModeAuto, "git status && git push"), authz.Allow},
		{"other subcommand", cmdReq(authz.ModeAuto, "git reset --hard"), authz.Ask},
		{"deny stays deny", cmdReq(authz.ModeAuto, "git push --force origin main"), authz.Deny},
		{"also something else", cmdReq(authz.ModeAuto, "git push && make install"), authz.Ask},
		{"workspace script named git", cmdReq(authz.ModeAuto, "./git push"), authz.Ask},
		{"other conversation", func() *authz.Request { r := cmdReq(authz.ModeAuto, "git push"); r.ConversationID = "other"; return r }(), authz.Ask},
		{"other tool", &authz.Request{ConversationID: "conv", Mode: authz.ModeAuto, Tool: "terminal", Operation: "send_input",
			Risk: tools.RiskHigh, Effect: tools.Effect{Command: "git push"}}, authz.Ask},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := authorize(t, e, tc.req)
			if v.Decision != tc.want {
				t.Fatalf("got %s (%s: %s), want %s", v.Decision, v.Rule, v.Reason, tc.want)
			}
			if tc.want == authz.Allow && (v.Grant == nil || v.Grant.ID != g.ID || v.Rule != "grant:"+g.ID) {
				t.Errorf("grant %+v rule %s", v.Grant, v.Rule)
			}
		})
	}
	// A conversation grant is not consumed; it expires.
	clock.Advance(299 * time.Second)
	if v := authorize(t, e, req); v.Decision != authz.Allow {
		t.Fatalf("before expiry: %s", v.Decision)
	}
	clock.Advance(time.Second)
	if v := authorize(t, e, req); v.Decision != authz.Ask {
		t.Fatalf("after expiry: %s", v.Decision)
	}
	if gs := e.Grants(""); len(gs) != 0 {
		t.Errorf("expired grants listed: %+v", gs)
	}
}

func TestOnceGrantIsConsumed(t *testing.T) {
	f := newFixture(t)
	clock := newClock()
	e := f.engine(t, nil, clock.Now)
	req := writeReq(authz.ModeAuto, "../out/new.txt")
	// user_collaboration records a one-time grant of tool.operation.
	g, err := e.Grant("conv", authz.Scope{Tool: "file_operations", Operation: "write_file"}, true, 0, "user_collaboration")
	if err != nil {
		t.Fatal(err)
	}
	if !g.Once || g.Scope.Conversation || !g.ExpiresAt.Equal(clock.Now().Add(authz.DefaultGrantTTL)) {
		t.Fatalf("grant %+v", g)
	}
	// Explain reports the grant and does not consume it.
	for range 2 {
		v, err := e.Explain(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if v.Decision != authz.Allow || v.Grant == nil || v.Grant.ID != g.ID {
			t.Fatalf("explain: %s %+v", v.Decision, v.Grant)
		}
	}
	v := authorize(t, e, req)
	if v.Decision != authz.Allow || v.Grant == nil || !v.Grant.Once || len(v.Outside) != 1 {
		t.Fatalf("first call: %s %+v %v", v.Decision, v.Grant, v.Outside)
	}
	if v := authorize(t, e, req); v.Decision != authz.Ask {
		t.Fatalf("second call: %s; the one-time grant was not consumed", v.Decision)
	}
	if gs := e.Grants("conv"); len(gs) != 0 {
		t.Errorf("consumed grant listed: %+v", gs)
	}
	// The operation's flat name works too.
	if _, err := e.Grant("conv", authz.Scope{Tool: "write_file"}, true, 0, "user_collaboration"); err != nil {
		t.Fatal(err)
	}
	if v := authorize(t, e, req); v.Decision != authz.Allow {
		t.Fatalf("flat name: %s", v.Decision)
	}
	// A one-time grant never lifts a deny, and is then not consumed.
	if _, err := e.Grant("conv", authz.Scope{Tool: "file_operations"}, true, 0, "user_collaboration"); err != nil {
		t.Fatal(err)
	}
	if v := authorize(t, e, writeReq(authz.ModeAuto, ".env")); v.Decision != authz.Deny {
		t.Fatalf("got %s", v.Decision)
	}
	if len(e.Grants("conv")) != 1 {
		t.Errorf("a denied call consumed the grant")
	}
	// Expired one-time grants are removed without being used.
	clock.Advance(authz.DefaultGrantTTL)
	if v := authorize(t, e, req); v.Decision != authz.Ask {
		t.Fatalf("expired grant used: %s", v.Decision)
	}
	if len(e.Grants("")) != 0 {
		t.Errorf("expired grant kept")
	}
}

func TestOnceGrantConcurrent(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, nil, nil)
	const n = 32
	for round := range 5 {
		if _, err := e.Grant("conv", authz.Scope{Tool: "file_operations", Operation: "write_file"}, true, 0, "user_collaboration"); err != nil {
			t.Fatal(err)
		}
		var allowed atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				v, err := e.Authorize(context.Background(), writeReq(authz.ModeAuto, "src/x.go"))
				if err != nil {
					t.Error(err)
				}
				if v.Decision == authz.Allow {
					allowed.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if got := allowed.Load(); got != 1 {
			t.Fatalf("round %d: %d calls used one one-time grant", round, got)
		}
	}
}

func TestPathPrefixGrant(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, nil, nil)
	v := authorize(t, e, writeReq(authz.ModeAuto, "../out/deep/a.txt"))
	if v.Decision != authz.Ask || len(v.Scopes) < 2 {
		t.Fatalf("got %s %+v", v.Decision, v.Scopes)
	}
	if _, err := e.Grant("conv", v.Scopes[1], false, 0, "client"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want authz.Decision
	}{
		{"../out/deep/b.txt", authz.Allow},
		{"{out}/deep/sub/c.txt", authz.Allow},
		{"link-out/deep/d.txt", authz.Allow},
		{"../out/file.txt", authz.Ask},
		{"../out/deep-evil/x", authz.Ask},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			v := authorize(t, e, writeReq(authz.ModeAuto, f.expand(tc.path)))
			if v.Decision != tc.want {
				t.Fatalf("got %s (%s)", v.Decision, v.Reason)
			}
		})
	}
	// The grant is for write_file: read_file still asks.
	if v := authorize(t, e, readReq(authz.ModeAuto, "../out/deep/x")); v.Decision != authz.Ask {
		t.Fatalf("read: %s", v.Decision)
	}
}

func TestGrantsAndRevoke(t *testing.T) {
	f := newFixture(t)
	clock := newClock()
	e := f.engine(t, nil, clock.Now)
	var ids []string
	for i, conv := range []string{"a", "b", "a"} {
		g, err := e.Grant(conv, authz.Scope{Tool: "run_command", CommandPrefix: "make"}, false, time.Duration(i+1)*time.Minute, "client")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, g.ID)
		clock.Advance(time.Second)
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("grant ids not unique: %v", ids)
	}
	list := func(conv string) string {
		var out []string
		for _, g := range e.Grants(conv) {
			out = append(out, g.ID)
		}
		return strings.Join(out, ",")
	}
	if got, want := list(""), strings.Join(ids, ","); got != want {
		t.Errorf("all: %s, want %s (oldest first)", got, want)
	}
	if got, want := list("a"), ids[0]+","+ids[2]; got != want {
		t.Errorf("a: %s, want %s", got, want)
	}
	if !e.Revoke(ids[2]) || e.Revoke(ids[2]) || e.Revoke("grant-nope") {
		t.Error("revoke")
	}
	if got := list("a"); got != ids[0] {
		t.Errorf("after revoke: %s", got)
	}
	clock.Advance(time.Minute)
	if got := list(""); got != ids[1] {
		t.Errorf("after expiry: %s, want %s", got, ids[1])
	}
}

func TestGrantValidation(t *testing.T) {
	f := newFixture(t)
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: f.w, DefaultTTL: time.Minute, MaxTTL: time.Hour, Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		conv  string
		scope authz.Scope
	}{
		{"no conversation", "", authz.Scope{Tool: "x"}},
		{"no tool", "c", authz.Scope{}},
		{"relative prefix", "c", authz.Scope{Tool: "x", PathPrefix: "out"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Grant(tc.conv, tc.scope, false, 0, "x")
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("got %v", err)
			}
		})
	}
	g, err := e.Grant("c", authz.Scope{Tool: "x"}, false, 0, "x")
	if err != nil || g.Scope.TTL != time.Minute || !g.Scope.Conversation {
		t.Errorf("default ttl: %+v %v", g, err)
	}
	g, _ = e.Grant("c", authz.Scope{Tool: "x"}, false, 48*time.Hour, "x")
	if g.Scope.TTL != time.Hour {
		t.Errorf("ttl not capped: %s", g.Scope.TTL)
	}
}

func TestExplainHasNoSideEffects(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, loadExample(t), nil)
	for _, line := range []string{"ls", "git push", "rm -rf /", "$X"} {
		a, _ := e.Explain(context.Background(), cmdReq(authz.ModeAuto, line))
		b := authorize(t, e, cmdReq(authz.ModeAuto, line))
		if a.Decision != b.Decision || a.Rule != b.Rule || a.Reason != b.Reason || len(a.Commands) != len(b.Commands) {
			t.Errorf("%q: explain %s/%s, authorize %s/%s", line, a.Decision, a.Rule, b.Decision, b.Rule)
		}
	}
	if _, err := e.Explain(context.Background(), nil); err == nil {
		t.Error("nil request")
	}
}

func TestRequestDir(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, nil, nil)
	// From the workspace root up/out/f is a new file inside; from src it
	// goes through src/up (-> ../..) to base/out/f, outside.
	req := cmdReq(authz.ModeYOLO, "echo x > up/out/f")
	if v := authorize(t, e, req); v.Decision != authz.Allow {
		t.Fatalf("from the root: %s (%s)", v.Decision, v.Reason)
	}
	req.Dir = f.ws + "/src"
	if v := authorize(t, e, req); v.Decision != authz.Ask || v.Rule != "builtin:outside-write" {
		t.Fatalf("from src: %s %s (%s)", v.Decision, v.Rule, v.Reason)
	}
	req = cmdReq(authz.ModeYOLO, "cat id_rsa")
	if v := authorize(t, e, req); v.Decision != authz.Allow {
		t.Fatalf("from the root: %s (%s)", v.Decision, v.Reason)
	}
	req.Dir = f.home + "/.ssh"
	if v := authorize(t, e, req); v.Decision != authz.Deny {
		t.Fatalf("from ~/.ssh: %s (%s)", v.Decision, v.Reason)
	}
}

func TestSensitiveAPI(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, nil, nil)
	var _ authz.Sensitivity = e
	tests := []struct {
		path string
		want bool
	}{
		{"{ws}/.env", true},
		{"{ws}/.env.example", false},
		{"{ws}/config/.env.local", true},
		{"{ws}/src/main.go", false},
		{"{home}/.ssh", true},
		{"{home}/.ssh/known_hosts", true},
		{"{home}/.ssh/.env.example", true},
		{"{home}/notes.txt", false},
		{"/etc/shadow", true},
		{"/etc/passwd", false},
		{"/home/bob/.aws/credentials", true},
		{"{ws}/certs/server.pem", true},
		{"{ws}/certs", false},
		{"/proc/42/environ", true},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			if got := e.Sensitive(f.expand(tc.path)); got != tc.want {
				t.Fatalf("got %v", got)
			}
		})
	}
	m, err := authz.NewSensitiveMatcher("/w", "/h", []string{"secrets", "!secrets/public", "*.key", "!demo.key", "~/.vault"})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"/w/secrets/a": true, "/w/secrets/public": true, "/w/x/demo.key": false, "/w/x/prod.key": true,
		"/h/.vault/x": true, "/root/.vault": true, "/w/public": false,
	} {
		if got := m.Sensitive(p); got != want {
			t.Errorf("%s: got %v, want %v", p, got, want)
		}
	}
}

func TestNewEngineErrors(t *testing.T) {
	if _, err := authz.NewEngine(authz.EngineConfig{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("no workspace: %v", err)
	}
	f := newFixture(t)
	if _, err := authz.NewEngine(authz.EngineConfig{Workspace: f.w, ReadRoots: []string{"relative"}}); err == nil {
		t.Error("relative read root accepted")
	}
	if _, err := authz.NewEngine(authz.EngineConfig{Workspace: f.w, Sensitive: []string{"[bad"}}); err == nil {
		t.Error("bad sensitive pattern accepted")
	}
}

func TestExtraSensitive(t *testing.T) {
	f := newFixture(t)
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: f.w, Home: f.home, Sensitive: []string{f.base + "/toold.token", "docs"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f.base + "/toold.token", "docs/readme.md"} {
		if v := authorize(t, e, readReq(authz.ModeYOLO, p)); v.Decision != authz.Deny {
			t.Errorf("%s: %s", p, v.Decision)
		}
	}
}

func BenchmarkAuthorizeCommand(b *testing.B) {
	f := newFixture(b)
	p, err := authz.LoadPolicy("../../examples/policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: f.w, Policy: p, Home: f.home})
	if err != nil {
		b.Fatal(err)
	}
	req := cmdReq(authz.ModeAuto, "git status && go test ./... 2>&1 | tail -20; cat README.md | grep -n TODO > notes/todo.txt")
	for b.Loop() {
		if _, err := e.Authorize(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCommandWorkingDir: a tool that runs a command line names its working
// directory in Effect.Reads and Effect.Writes (pkg/tools/terminal does).
func TestCommandWorkingDir(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, loadExample(t), nil)
	run := func(mode authz.Mode, dir, line string) *authz.Request {
		r := cmdReq(mode, line)
		r.Effect.Reads, r.Effect.Writes = []string{dir}, []string{dir}
		return r
	}
	tests := []struct {
		name string
		req  *authz.Request
		want authz.Decision
		rule string
	}{
		{"allowed command at the root", run(authz.ModeAuto, ".", "git status"), authz.Allow, "git-read-only"},
		{"allowed command in a subdirectory", run(authz.ModeAuto, "src", "ls -la"), authz.Allow, "read-only-commands"},
		{"not allowed command", run(authz.ModeAuto, ".", "make install"), authz.Ask, "mode:auto"},
		{"outside the workspace", run(authz.ModeYOLO, "../out", "ls"), authz.Ask, "builtin:outside-write"},
		{"through a symlink out", run(authz.ModeAuto, "link-out", "ls"), authz.Ask, "builtin:outside-write"},
		{"in a sensitive directory", run(authz.ModeYOLO, "link-home-ssh", "ls"), authz.Deny, "builtin:sensitive-path"},
		{"relative paths start there", run(authz.ModeYOLO, "src", "echo x > up/out/f"), authz.Ask, "builtin:outside-write"},
		{"secrets found from there", run(authz.ModeAuto, "config", "cat .env.local"), authz.Deny, "builtin:sensitive-path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := authorize(t, e, tc.req)
			if v.Decision != tc.want || v.Rule != tc.rule {
				t.Fatalf("got %s %s (%s), want %s %s", v.Decision, v.Rule, v.Reason, tc.want, tc.rule)
			}
		})
	}
}

// Effect.Dir is where a command runs: relative paths start there, and a
// directory outside the workspace makes the command a write outside.
func TestCommandDir(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, loadExample(t), nil)
	tests := []struct {
		name, dir, line string
		want            authz.Decision
	}{
		{"read-only command in a subdirectory", "src", "ls", authz.Allow},
		{"relative path from the directory", "src", "cat main.go", authz.Allow},
		{"relative path reaching a secret", "config", "cat .env.local", authz.Deny},
		{"directory outside the workspace", f.out, "touch x", authz.Ask},
		{"directory through a symlink out", "link-out", "touch x", authz.Ask},
		{"sensitive directory", f.home + "/.ssh", "ls", authz.Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := cmdReq(authz.ModeYOLO, tt.line)
			req.Effect.Dir = tt.dir
			if v := authorize(t, e, req); v.Decision != tt.want {
				t.Fatalf("%s in %s: %v (%s: %s), want %v", tt.line, tt.dir, v.Decision, v.Rule, v.Reason, tt.want)
			}
		})
	}
}

// TestEngineKeptParseIsNotChanged: the engine keeps a command line's
// parse, and the judge adds problems to a line's commands that depend on
// more than the line (popd asks only where earlier lines of the shell
// filled its stack: a call with a directory). Judging the same line in
// another situation must not see a problem added for an earlier call, in
// either order.
func TestEngineKeptParseIsNotChanged(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, nil, nil)
	plain := cmdReq(authz.ModeYOLO, "popd")
	inDir := cmdReq(authz.ModeYOLO, "popd")
	inDir.Dir = f.ws
	for i, c := range []struct {
		req  *authz.Request
		want authz.Decision
	}{{plain, authz.Allow}, {inDir, authz.Ask}, {plain, authz.Allow}, {inDir, authz.Ask}, {plain, authz.Allow}} {
		if v := authorize(t, e, c.req); v.Decision != c.want {
			t.Fatalf("call %d (dir %q): %v (%s: %s), want %v", i, c.req.Dir, v.Decision, v.Rule, v.Reason, c.want)
		}
	}
}
