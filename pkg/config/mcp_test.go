package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/config"
)

// The mcp: section is read from YAML, and from a file of the format of
// Claude Desktop; its own tests are in pkg/mcp/mcpconfig.
func TestLoadMCPFromYAMLAndFile(t *testing.T) {
	dir := t.TempDir()
	file, err := filepath.Abs("../mcp/mcpconfig/testdata/desktop.json") // a Claude Desktop file
	if err != nil {
		t.Fatal(err)
	}
	yml := filepath.Join(dir, "toold.yaml")
	os.WriteFile(yml, []byte("mcp:\n  http: true\n  config_file: "+file+"\n  mcpServers:\n    local:\n      command: node\n      args: [server.js]\n      cwd: /tmp\n      toold: {risk: low}\n"), 0o644)
	c, err := config.Load(yml)
	if err != nil {
		t.Fatal(err)
	}
	servers, err := c.MCP.ResolveServers()
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 7 || servers["local"].Cwd != "/tmp" || servers["local"].Toold.Risk != "low" || !c.MCP.HTTP {
		t.Fatalf("servers %v http %v", servers, c.MCP.HTTP)
	}

	bad := []struct{ name, yaml, err string }{
		{"typo in the toold block", "mcp:\n  mcpServers:\n    a:\n      command: x\n      toold: {rsik: low}\n", "unknown keys rsik"},
		{"invalid entry", "mcp:\n  mcpServers:\n    a__b:\n      command: x\n", "MCP server name"},
		{"twice", "mcp:\n  config_file: " + file + "\n  mcpServers:\n    everything:\n      command: x\n", "defined both"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			os.WriteFile(p, []byte(tt.yaml), 0o644)
			c, err := config.Load(p)
			if err == nil {
				_, err = c.MCP.ResolveServers()
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}
