package main

import (
	"strings"
	"testing"
)

// toold mcp --dialect NAME chooses the tool set the MCP server presents;
// the daemon's own flags still parse around it.
func TestParseMCPDialect(t *testing.T) {
	for _, args := range [][]string{
		{"--dialect", "claude-code", "--workspace", "."},
		{"--workspace", ".", "-dialect=claude-code"},
	} {
		m, err := parseMCPFlags(args)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if m.MCPDialect != "claude-code" || m.Config.Workspace != "." {
			t.Errorf("%v: dialect %q workspace %q", args, m.MCPDialect, m.Config.Workspace)
		}
	}
	if _, err := parseMCPFlags([]string{"--dialect"}); err == nil || !strings.Contains(err.Error(), "needs an argument") {
		t.Errorf("--dialect without a value: %v", err)
	}
}
