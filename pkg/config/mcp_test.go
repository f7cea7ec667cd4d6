package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/config"
)

// A Claude Desktop file, with keys of other clients and a toold block.
const desktop = `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "autoApprove": ["echo"], "alwaysAllow": []},
    "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
    "old": {"url": "http://127.0.0.1:3001/sse"},
    "typed": {"type": "streamableHttp", "url": "http://127.0.0.1:3001/mcp"},
    "tuned": {"command": "srv", "toold": {"risk": "HIGH", "tool_risk": {"read": "low"}, "idle_timeout": "5s", "max_timeout": 90}},
    "off": {"command": "srv", "disabled": true}
  }
}`

func TestParseMCPJSON(t *testing.T) {
	servers, err := config.ParseMCPJSON([]byte(desktop))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, transport string
		ignored         []string
	}{
		{"everything", config.MCPStdio, []string{"alwaysAllow", "autoApprove"}},
		{"remote", config.MCPHTTP, nil},
		{"old", config.MCPSSE, nil},
		{"typed", config.MCPHTTP, nil},
		{"tuned", config.MCPStdio, nil},
		{"off", config.MCPStdio, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := servers[tt.name]
			if s.Transport() != tt.transport || !slices.Equal(s.Ignored, tt.ignored) {
				t.Fatalf("transport %q ignored %v", s.Transport(), s.Ignored)
			}
			if err := s.Validate(tt.name); err != nil {
				t.Fatal(err)
			}
		})
	}
	tuned := servers["tuned"].Toold
	if tuned.Risk != "HIGH" || tuned.ToolRisk["read"] != "low" || time.Duration(tuned.IdleTimeout) != 5*time.Second || time.Duration(tuned.MaxTimeout) != 90*time.Second {
		t.Fatalf("toold block %+v", tuned)
	}
	if !servers["off"].Disabled {
		t.Fatal("disabled lost")
	}
}

func TestMCPServerValidate(t *testing.T) {
	tests := []struct {
		name  string
		entry config.MCPServer
		err   string
	}{
		{"x__y", config.MCPServer{Command: "a"}, "single '_'"},
		{"a.b", config.MCPServer{Command: "a"}, "MCP server name"},
		{"ok", config.MCPServer{}, "give a command"},
		{"ok", config.MCPServer{Command: "a", URL: "http://h/mcp"}, "not url or headers"},
		{"ok", config.MCPServer{URL: "ftp://h/x"}, "want an http"},
		{"ok", config.MCPServer{Type: "sse", Command: "a"}, "needs a url"},
		{"ok", config.MCPServer{Type: "websocket", URL: "ws://h"}, "want stdio, http or sse"},
		{"ok", config.MCPServer{Command: "a", Toold: config.MCPServerPolicy{Risk: "scary"}}, "toold.risk"},
		{"ok", config.MCPServer{URL: "${BASE}/mcp"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.err, func(t *testing.T) {
			err := tt.entry.Validate(tt.name)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}

func TestLoadMCPFromYAMLAndFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	os.WriteFile(file, []byte(desktop), 0o644)
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
	if _, err := config.ParseMCPJSON([]byte(`{"other": 1}`)); err == nil || !strings.Contains(err.Error(), "mcpServers") {
		t.Fatalf("no mcpServers: %v", err)
	}
}
