package main

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/mcp/mcptest"
	"github.com/toold/toold/pkg/testenv"
)

func TestMCPUsage(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t)
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no command", []string{"mcp", "add", "x"}, "give a command after --"},
		{"command without --", []string{"mcp", "add", "x", "npx", "server"}, "put the server's command after --"},
		{"bad name", []string{"mcp", "add", "bad__name", "--", "server"}, "MCP server name"},
		{"bad env", []string{"mcp", "add", "x", "--env", "NOEQUALS", "--", "server"}, "want KEY=VALUE"},
		{"bad risk", []string{"mcp", "add", "x", "--risk", "scary", "--", "server"}, "want low, medium or high"},
		{"json and command", []string{"mcp", "add", "x", "--json", `{"command":"a"}`, "--", "b"}, "--json gives the whole entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runAt(t, d.Socket, tt.args...)
			r.check(t, exitUsage, nil, []string{tt.stderr})
		})
	}
	// toold answered that there is no such server: the command failed (1).
	r := runAsOperator(t, d, "mcp", "remove", "nope")
	r.check(t, exitFailure, nil, []string{"remove MCP server nope: ", "nope"})
	r = runAsOperator(t, d, "mcp", "list")
	r.check(t, exitOK, []string{"no MCP servers"}, nil)
}

// add, list, call and remove against server-everything; a server that
// does not start is added but reported (exit 1).
func TestMCPAddListRemove(t *testing.T) {
	t.Parallel()
	peers := mcptest.Require(t)
	d := daemontest.Start(t)

	r := runAsOperator(t, d, "mcp", "add", "everything", "--", peers.Node, peers.Everything, "stdio")
	if r.code == exitFailure && strings.Contains(r.stderr, "was added but is not connected") {
		// The first start of node under a loaded machine can fail its
		// handshake (seen in CI with every package testing at once);
		// toold keeps retrying, as the message says: wait for it.
		t.Logf("first connect failed, waiting for toold's retry: %s", r.stdout)
		testenv.Poll(t, time.Minute, "everything connected after toold's retries", func() bool {
			l := runAsOperator(t, d, "mcp", "list")
			for _, line := range strings.Split(l.stdout, "\n") {
				if strings.HasPrefix(line, "everything ") && strings.Contains(line, "connected") && !strings.Contains(line, "down") {
					return true
				}
			}
			return false
		})
	} else {
		r.check(t, exitOK, []string{"everything: connected", "everything__echo"}, nil)
	}

	r = runAsOperator(t, d, "mcp", "add", "broken", "--json", `{"command":"/nonexistent/mcp-server"}`)
	r.check(t, exitFailure, []string{"broken: down:"}, []string{"was added but is not connected"})

	r = runAsOperator(t, d, "mcp", "list")
	r.check(t, exitOK, []string{"NAME", "broken", "stdio", "down:", "everything", "connected"}, nil)

	r = runAsOperator(t, d, "mcp", "list", "--json")
	var resp pb.ListMcpServersResponse
	if err := protojson.Unmarshal([]byte(r.stdout), &resp); err != nil || len(resp.GetServers()) != 2 {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}

	r = runAt(t, d.Socket, "call", "everything.echo", "message=from toolctl")
	r.check(t, exitOK, []string{"Echo: from toolctl"}, nil)

	for _, name := range []string{"everything", "broken"} {
		r = runAsOperator(t, d, "mcp", "remove", name)
		r.check(t, exitOK, []string{name + " removed"}, nil)
	}
	r = runAt(t, d.Socket, "call", "everything__echo", "message=x")
	if r.code != exitFailure || !strings.Contains(r.stderr+r.stdout, "TOOL_NOT_FOUND") {
		t.Fatalf("call after remove: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
