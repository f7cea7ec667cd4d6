package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/mcp/mcptest"
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
