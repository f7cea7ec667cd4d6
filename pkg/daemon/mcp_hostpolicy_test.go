package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// examples/policy-mcp-hosts.yaml, for hosts that cannot answer an approval
// (no elicitation, as headless codex and Claude Code and gemini-cli), under
// AUTO: edits in the workspace and the usual commands run without asking;
// what would ask is DENIED with the reason, and has no effect.
func TestStarterPolicyForHostsWithoutElicitation(t *testing.T) {
	outside := t.TempDir()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Listen = "127.0.0.1:0"
		c.Token = "s3cret"
		c.MCP.HTTP = true
		c.ApprovalMode = "auto"
		c.PolicyFile = "../../examples/policy-mcp-hosts.yaml"
	}))
	os.WriteFile(filepath.Join(d.Workspace, "keep.txt"), []byte("keep\n"), 0o644)
	tests := []struct {
		name, tool string
		args       map[string]any
		ok         bool
		contains   string
		effect     func() bool // did the call's effect happen?
	}{
		{"edit in the workspace", "write_file", map[string]any{"path": "new.txt", "content": "written\n"}, true, "",
			func() bool { _, err := os.Stat(filepath.Join(d.Workspace, "new.txt")); return err == nil }},
		{"read-only command", "run_command", map[string]any{"command": "ls && echo LISTED"}, true, "LISTED", nil},
		{"delete asks, so is denied", "run_command", map[string]any{"command": "rm keep.txt"}, false, "Error (DENIED)",
			func() bool { _, err := os.Stat(filepath.Join(d.Workspace, "keep.txt")); return err != nil }},
		{"write outside the workspace", "write_file", map[string]any{"path": filepath.Join(outside, "x.txt"), "content": "x"}, false, "Error (DENIED)",
			func() bool { _, err := os.Stat(filepath.Join(outside, "x.txt")); return err == nil }},
	}
	for _, era := range mcpEras {
		cs := connectMCPHTTP(t, d, "s3cret", era, nil) // no elicitation
		for _, tt := range tests {
			t.Run(era+"/"+tt.name, func(t *testing.T) {
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tt.tool, Arguments: tt.args})
				if err != nil {
					t.Fatal(err)
				}
				var txt string
				for _, c := range res.Content {
					if tc, ok := c.(*sdk.TextContent); ok {
						txt += tc.Text
					}
				}
				if res.IsError == tt.ok || !strings.Contains(txt, tt.contains) {
					t.Fatalf("isError %v: %q", res.IsError, txt)
				}
				if !tt.ok && !strings.Contains(txt, "elicitation") {
					t.Fatalf("the denial does not say why: %q", txt)
				}
				if tt.effect != nil && tt.effect() != tt.ok {
					t.Fatalf("effect happened: %v, want %v", tt.effect(), tt.ok)
				}
			})
		}
	}
}
