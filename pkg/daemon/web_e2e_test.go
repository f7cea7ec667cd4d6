package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/sandbox"
)

func jsonArgs(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

func asked(evs []*pb.ServerEvent) *pb.RequiresApproval {
	for _, e := range evs {
		if a := e.GetRequiresApproval(); a != nil {
			return a
		}
	}
	return nil
}

// TestWebFetchPolicyEndToEnd: web_fetch through the real daemon and its
// policy. In AUTO a host no rule allows asks; approving does not open the
// machine's own network (the guard still refuses loopback); a hosts rule
// that names the host does; metadata hosts and denied hosts are denied.
func TestWebFetchPolicyEndToEnd(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><head><title>Local</title></head><body><article><h1>Hello</h1><p>A page served on loopback for the end-to-end test, long enough to be the main content of the page.</p></article></body></html>"))
	}))
	t.Cleanup(srv.Close)
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(policyFile, []byte(`rules:
  - name: intranet
    decision: allow
    tool: web_operations
    hosts: [localhost]
  - name: no-example
    decision: deny
    reason: not this one
    hosts: ["*.blocked.example"]
`), 0o644)
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "auto"; c.PolicyFile = policyFile }))
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "web-e2e"}}})
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	// No rule names 127.0.0.1: AUTO asks, offering the host.
	res, evs := x.call("a1", "web_fetch", jsonArgs(map[string]any{"url": srv.URL + "/"}), deny("no"))
	a := asked(evs)
	if a == nil || res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER {
		t.Fatalf("unknown host: asked %v, result %v", a, res)
	}
	if !strings.Contains(a.GetReason(), "host 127.0.0.1") {
		t.Fatalf("ask reason: %q", a.GetReason())
	}
	// Approved once: the guard still refuses a loopback address.
	res, _ = x.call("a2", "web_fetch", jsonArgs(map[string]any{"url": srv.URL + "/"}), approveOnce)
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED || !strings.Contains(res.GetError().GetMessage(), "loopback") {
		t.Fatalf("approved loopback fetch: %v", res)
	}
	// Approved for this host in the conversation: the next fetch of the
	// host does not ask (and the guard still refuses loopback).
	hostScope := func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		for _, s := range a.GetScopes() {
			if s.GetHost() == "127.0.0.1" && s.GetKind() == pb.ApprovalScope_KIND_CONVERSATION {
				return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true, ScopeId: s.GetScopeId()}
			}
		}
		t.Fatalf("no host scope offered: %v", a.GetScopes())
		return nil
	}
	x.call("a2b", "web_fetch", jsonArgs(map[string]any{"url": srv.URL + "/one"}), hostScope)
	res, evs = x.call("a2c", "web_fetch", jsonArgs(map[string]any{"url": srv.URL + "/two"}))
	if asked(evs) != nil || res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED {
		t.Fatalf("after the host grant: %v", res)
	}
	if hits.Load() != 0 {
		t.Fatal("the loopback server was reached without a rule naming it")
	}
	// A rule naming the host: allowed, no question, and the guard lets it
	// reach loopback.
	res, evs = x.call("a3", "web_fetch", jsonArgs(map[string]any{"url": "http://localhost:" + port + "/"}))
	if !res.GetSuccess() || asked(evs) != nil || !strings.Contains(res.GetContent()[0].GetText(), "# Hello") {
		t.Fatalf("allowed host: %v", res)
	}
	// A redirect to another host is judged again, on the executor's
	// authorize path: 127.0.0.3 is neither allowed by a rule nor granted,
	// so the person is asked, in the call, about that host; refused, the
	// fetch stops there. (127.0.0.1 is granted above: the guard would
	// refuse it.)
	res, evs = x.call("a4", "web_fetch", jsonArgs(map[string]any{"url": "http://localhost:" + port + "/?to=http://127.0.0.3:" + port + "/x"}), deny("not there"))
	if a := asked(evs); a == nil || !slices.Contains(a.GetEffect().GetHosts(), "127.0.0.3") ||
		res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER || !strings.Contains(res.GetError().GetMessage(), "redirects to http://127.0.0.3") {
		t.Fatalf("redirect to another host: asked %v, result %v", a, res)
	}
	// Metadata and denied hosts: denied by rule, in every mode.
	for id, u := range map[string]string{"m1": "http://169.254.169.254/latest/meta-data/", "m2": "http://metadata.google.internal/", "d1": "https://x.blocked.example/"} {
		res, evs = x.call(id, "web_fetch", jsonArgs(map[string]any{"url": u}))
		if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED || asked(evs) != nil {
			t.Fatalf("%s: %v", u, res)
		}
	}
	// web_search without a provider names the config key; ListTools does
	// not offer it but lists it as unavailable, saying why.
	res, _ = x.call("s1", "web_search", jsonArgs(map[string]any{"query": "x"}))
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_UNAVAILABLE || !strings.Contains(res.GetError().GetMessage(), "web.search.provider") {
		t.Fatalf("search without provider: %v", res)
	}
	list, err := d.Client.ListTools(context.Background(), &pb.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.GetTools() {
		for _, op := range tl.GetOperations() {
			if op.GetName() == "web_search" {
				t.Errorf("ListTools offers web_search without a provider")
			}
		}
	}
	if u := list.GetUnavailable(); len(u) != 1 || u[0].GetName() != "web_search" || !strings.Contains(u[0].GetReason(), "web.search.provider") {
		t.Errorf("unavailable: %v", u)
	}
	if hits.Load() != 2 {
		t.Fatalf("server hits %d, want 2", hits.Load())
	}
}

// A redirect is judged with the stream's mode, not the server's: a YOLO
// server with an ASK stream does not follow a redirect to a new host
// unasked (before, the wiring judged it with the server's YOLO and followed
// it). The person is asked about the redirect's host, and refusing stops
// the fetch; the redirect's target, a second local server, is never hit.
// (The address guard would refuse that loopback address too: the
// question is what this test proves.)
func TestWebFetchRedirectUsesStreamMode(t *testing.T) {
	var canary atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		canary.Add(1)
		w.Write([]byte("<html><body><p>canary reached</p></body></html>"))
	}))
	t.Cleanup(target.Close)
	start := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/", http.StatusFound)
	}))
	t.Cleanup(start.Close)
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(policyFile, []byte(`rules:
  - name: local
    decision: allow
    tool: web_operations
    hosts: [localhost]
`), 0o644)
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo"; c.PolicyFile = policyFile }))
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "web-ask", ApprovalMode: pb.ApprovalMode_APPROVAL_MODE_ASK}}})
	port := start.URL[strings.LastIndex(start.URL, ":")+1:]
	var hosts [][]string
	decide := func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		hosts = append(hosts, a.GetEffect().GetHosts())
		return &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Reason: "not that host"}
	}
	res, _ := x.call("r1", "web_fetch", jsonArgs(map[string]any{"url": "http://localhost:" + port + "/"}), decide)
	if res.GetSuccess() || canary.Load() != 0 {
		t.Fatalf("the redirect was followed: %v (canary hits %d)", res, canary.Load())
	}
	// localhost is allowed by its rule (ASK asks for what no rule allows):
	// the one question is the redirect's.
	if len(hosts) != 1 || !slices.Contains(hosts[0], "127.0.0.1") {
		t.Fatalf("asked about %v, want the redirect's host only", hosts)
	}
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER {
		t.Fatalf("result %v, want REJECTED_BY_USER for the redirect", res)
	}
}

// TestRunTaskJudgedLikeRunCommand: run_task is decided exactly as
// run_command of the command line it expands to, rule by rule.
func TestRunTaskJudgedLikeRunCommand(t *testing.T) {
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(policyFile, []byte(`rules:
  - name: make-test
    decision: allow
    commands: ["make test"]
  - name: no-deploy
    decision: deny
    reason: deploys go through CI
    commands: ["make deploy"]
`), 0o644)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "Makefile"), []byte("test: ## Run the tests.\n\t@echo tests pass\ndeploy:\n\t@touch deployed\nlint:\n\t@echo lint\n"), 0o644)
	d := daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "auto"; c.PolicyFile = policyFile }))
	pol := pb.NewPolicyServiceClient(d.Conn)
	ctx := context.Background()
	for _, c := range []struct {
		task    string
		args    []string
		command string
	}{
		{"test", nil, "make test"},
		{"deploy", nil, "make deploy"},
		{"lint", nil, "make lint"},
		{"test", []string{"V=1; make deploy"}, "make test 'V=1; make deploy'"},
	} {
		rt, err := pol.Explain(ctx, &pb.ExplainRequest{Name: "run_task", Arguments: &pb.ExplainRequest_ArgumentsJson{ArgumentsJson: jsonArgs(map[string]any{"name": c.task, "args": c.args})}})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := pol.Explain(ctx, &pb.ExplainRequest{Name: "run_command", Arguments: &pb.ExplainRequest_ArgumentsJson{ArgumentsJson: jsonArgs(map[string]any{"command": c.command})}})
		if err != nil {
			t.Fatal(err)
		}
		if rt.GetEffect().GetCommand() != c.command || rt.GetDecision() != rc.GetDecision() || rt.GetRule() != rc.GetRule() || rt.GetRisk() != rc.GetRisk() {
			t.Errorf("%s %v: run_task %v/%s/%v (%q), run_command %v/%s/%v", c.task, c.args, rt.GetDecision(), rt.GetRule(), rt.GetRisk(), rt.GetEffect().GetCommand(), rc.GetDecision(), rc.GetRule(), rc.GetRisk())
		}
	}
	x := newSession(t, d)
	res, _ := x.call("t1", "run_task", jsonArgs(map[string]any{"name": "test"}))
	if !res.GetSuccess() || !strings.Contains(res.GetContent()[0].GetText(), "tests pass") {
		t.Fatalf("run_task test: %v", res)
	}
	res, _ = x.call("t2", "run_task", jsonArgs(map[string]any{"name": "deploy"}))
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED {
		t.Fatalf("run_task deploy: %v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "deployed")); err == nil {
		t.Fatal("a denied task ran")
	}

	// git through the stream: commit asks in AUTO (medium risk).
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required")
	}
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = E2E\n\temail = e2e@example.com\n"), 0o644)
	t.Setenv("HOME", home)
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir = ws
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	res, evs := x.call("g1", "git_status", "{}")
	if !res.GetSuccess() || asked(evs) != nil || !strings.Contains(res.GetContent()[0].GetText(), "Makefile") {
		t.Fatalf("git_status: %v", res)
	}
	res, evs = x.call("g2", "git_commit", jsonArgs(map[string]any{"message": "add the Makefile", "paths": []string{"Makefile"}}), approveOnce)
	if !res.GetSuccess() || asked(evs) == nil {
		t.Fatalf("git_commit: %v (asked %v)", res, asked(evs) != nil)
	}
	res, _ = x.call("g3", "git_log", "{}")
	if !strings.Contains(res.GetContent()[0].GetText(), "add the Makefile") {
		t.Fatalf("git_log: %v", res)
	}
}

// TestEgressProxyEndToEnd: with terminal.network: proxy, commands reach
// the network through toold's egress proxy: hosts rules and the guard
// apply to curl in run_command, a denied host prints why and how to ask,
// and with Landlock (ABI >= 4) a direct connection around the proxy fails.
func TestEgressProxyEndToEnd(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is required (make test-deps installs it)")
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("hello from the site"))
	}))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(policyFile, []byte(`rules:
  - name: local-site
    decision: allow
    hosts: [localhost]
  - name: no-denied
    decision: deny
    reason: not for commands
    hosts: ["*.denied"]
`), 0o644)
	// Sandboxed (the default), loopback is the sandbox's own and NO_PROXY
	// names it; --noproxy '' sends the host's localhost through the proxy.
	curl += " --noproxy ''"
	landlock := sandbox.LandlockABI() >= 4
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.PolicyFile = policyFile
		c.Terminal.Network = config.NetworkMode{Proxy: true}
		if !landlock {
			c.Terminal.Sandbox = "off"
		}
	}))
	x := newSession(t, d)
	run := func(id, line string) string {
		t.Helper()
		// A network client whose host is only known at run time asks in
		// every mode; the person approves it once, and the proxy judges
		// the host it really reaches.
		res, _ := x.call(id, "run_command", jsonArgs(map[string]any{"command": line}), approveOnce)
		if res.GetError() != nil {
			t.Fatalf("%s: %v", line, res.GetError())
		}
		return res.GetContent()[0].GetText()
	}
	if out := run("p0", "env | grep -c '^HTTPS_PROXY=http://127.0.0.1:'"); !strings.Contains(out, "1") {
		t.Fatalf("proxy env: %s", out)
	}
	if out := run("p1", curl+" -sS http://localhost:"+port+"/"); !strings.Contains(out, "hello from the site") {
		t.Fatalf("allowed host: %s", out)
	}
	// The policy denies a line naming the host; a host only known at run
	// time (approved once) meets the proxy.
	out := run("p2", "h=x.denied; "+curl+" -sS http://$h/")
	if !strings.Contains(out, "host x.denied is denied for commands (rule no-denied)") || !strings.Contains(out, "web_fetch") {
		t.Fatalf("denied host: %s", out)
	}
	for i, u := range []string{"http://127.0.0.1:" + port + "/", "http://169.254.169.254/latest/meta-data/", "http://metadata.google.internal/"} {
		if out := run(fmt.Sprint("p3-", i), "u='"+u+"'; "+curl+" -sS -i $u"); !strings.Contains(out, "403") {
			t.Fatalf("%s: %s", u, out)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("site hits %d, want 1", hits.Load())
	}
	if !landlock {
		t.Logf("Landlock ABI %d < 4: direct connections around the proxy are not refused on this kernel", sandbox.LandlockABI())
		return
	}
	out = run("p4", curl+" -sS --noproxy '*' http://localhost:"+port+"/; echo exit=$?")
	if strings.Contains(out, "hello from the site") || !strings.Contains(out, "exit=7") {
		t.Fatalf("direct connection around the proxy: %s", out)
	}
}
