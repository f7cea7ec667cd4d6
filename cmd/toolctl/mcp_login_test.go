package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/mcp/mcptest"
	"github.com/toold/toold/pkg/testenv"
)

// An OAuth-protected MCP server through toold and toolctl: add shows the
// URL to open, login waits while a person authorizes, the tool then runs;
// the token file is 0600 in the state directory, and neither the listings
// nor a command (which tries to read the file) show a token.
func TestMCPLoginOAuth(t *testing.T) {
	t.Parallel()
	p := mcptest.StartOAuthServer(t)
	state := t.TempDir()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.StateDir = state
		c.ApprovalMode = "yolo"
	}))

	r := runAsOperator(t, d, "mcp", "add", "sec", p.Base+"/mcp")
	r.check(t, exitFailure, []string{"sec: needs authorization: open " + p.Base + "/authorize?", "toolctl mcp login sec"}, []string{"was added and needs OAuth authorization", "toolctl mcp login sec"})
	r = runAsOperator(t, d, "mcp", "list", "--json")
	var resp pb.ListMcpServersResponse
	if err := protojson.Unmarshal([]byte(r.stdout), &resp); err != nil || len(resp.GetServers()) != 1 {
		t.Fatalf("list --json: %v\n%s", err, r.stdout)
	}
	st := resp.GetServers()[0]
	if st.GetState() != pb.McpServerState_MCP_SERVER_STATE_AUTHORIZING || st.GetAuthorizationUrl() == "" {
		t.Fatalf("listed: %v", st)
	}

	done := make(chan result, 1)
	go func() { done <- runAsOperator(t, d, "mcp", "login", "sec", "--timeout", "1m") }()
	if page := mcptest.AuthorizeAsPerson(t, st.GetAuthorizationUrl()); !strings.Contains(page, "authorization complete") {
		t.Fatalf("callback page: %s", page)
	}
	r = <-done
	r.check(t, exitOK, []string{"sec: ", "connected, 1 tools"}, nil)

	r = runAt(t, d.Socket, "call", "sec__whoami")
	r.check(t, exitOK, []string{"authorized caller"}, nil)

	file := filepath.Join(state, "mcp-oauth", "sec.json")
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	b, _ := os.ReadFile(file)
	issued := p.Issued()
	if len(issued) == 0 || !strings.Contains(string(b), issued[0]) {
		t.Fatalf("the token file holds no token (the canary is not real): %s", b)
	}
	var shown strings.Builder
	for _, args := range [][]string{{"mcp", "list"}, {"mcp", "list", "--json"}} {
		r := runAsOperator(t, d, args...)
		shown.WriteString(r.stdout + r.stderr)
	}
	// The policy refuses the path it sees; the sandbox masks the state
	// directory from a command that hides the path from the policy.
	r = runAt(t, d.Socket, "call", "run_command", "command=cat "+file+"; grep -r secret- "+state)
	shown.WriteString(r.stdout + r.stderr)
	hidden := base64.StdEncoding.EncodeToString([]byte(file))
	r = runAt(t, d.Socket, "call", "run_command", "command=cat \"$(echo "+hidden+" | base64 -d)\"; grep -r secret- \"$(dirname \"$(echo "+hidden+" | base64 -d)\")\"")
	t.Logf("the command's view: %s%s", r.stdout, r.stderr)
	shown.WriteString(r.stdout + r.stderr)
	for _, tok := range issued {
		if strings.Contains(shown.String(), tok) {
			t.Fatalf("token %s shown:\n%s", tok, shown.String())
		}
	}
}

// 'toolctl mcp login --force' discards the stored token and runs the
// authorization again, against the OAuth authorization server stand-in:
// without --force login asks nothing (authorized already); with it a new
// URL is shown, the person authorizes, and the tool runs with a newly
// issued token, which replaced the old one in the token file. A stdio
// server and an unknown name are refused.
func TestMCPLoginForce(t *testing.T) {
	t.Parallel()
	p := mcptest.StartOAuthServer(t)
	state := t.TempDir()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.StateDir = state
		c.ApprovalMode = "yolo"
	}))
	login := func(args ...string) result {
		done := make(chan result, 1)
		go func() {
			done <- runAsOperator(t, d, append([]string{"mcp", "login", "sec", "--timeout", "1m"}, args...)...)
		}()
		var url string
		testenv.Poll(t, 30*time.Second, "an authorization URL", func() bool {
			r := runAsOperator(t, d, "mcp", "list", "--json")
			var resp pb.ListMcpServersResponse
			if protojson.Unmarshal([]byte(r.stdout), &resp) == nil && len(resp.GetServers()) == 1 && resp.GetServers()[0].GetState() == pb.McpServerState_MCP_SERVER_STATE_AUTHORIZING {
				url = resp.GetServers()[0].GetAuthorizationUrl()
			}
			return url != ""
		})
		if page := mcptest.AuthorizeAsPerson(t, url); !strings.Contains(page, "authorization complete") {
			t.Fatalf("callback page: %s", page)
		}
		return <-done
	}

	runAsOperator(t, d, "mcp", "add", "sec", p.Base+"/mcp").check(t, exitFailure, nil, []string{"toolctl mcp login sec"})
	login().check(t, exitOK, []string{"connected, 1 tools"}, nil)
	file := filepath.Join(state, "mcp-oauth", "sec.json")
	first, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	runAsOperator(t, d, "mcp", "login", "sec", "--timeout", "1m").check(t, exitOK, []string{"(no authorization needed)"}, nil)
	if reg, _ := p.Counts(); reg != 1 {
		t.Fatalf("registrations before --force: %d", reg)
	}

	login("--force").check(t, exitOK, []string{"Open this URL", "sec: authorized", "connected, 1 tools"}, nil)
	if reg, _ := p.Counts(); reg != 2 {
		t.Fatalf("registrations after --force: %d, want a second authorization", reg)
	}
	second, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	issued := p.Issued()
	if last := issued[len(issued)-1]; string(first) == string(second) || !strings.Contains(string(second), last) {
		t.Fatalf("the token file was not replaced by the new token")
	}
	runAt(t, d.Socket, "call", "sec__whoami").check(t, exitOK, []string{"authorized caller"}, nil)

	runAsOperator(t, d, "mcp", "login", "nope", "--force").check(t, exitFailure, nil, []string{"no MCP server nope"})
	runAsOperator(t, d, "mcp", "add", "local", "--", "sh", "-c", "exit 1").check(t, exitFailure, nil, nil)
	runAsOperator(t, d, "mcp", "login", "local", "--force").check(t, exitUsage, nil, []string{"stdio server"})
}
