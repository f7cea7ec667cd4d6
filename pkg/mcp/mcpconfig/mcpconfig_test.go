package mcpconfig_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/mcp/mcpconfig"
)

// desktop is a Claude Desktop file, with keys of other clients and a toold
// block.
func desktop(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/desktop.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseJSON(t *testing.T) {
	servers, err := mcpconfig.ParseJSON(desktop(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, transport string
		ignored         []string
	}{
		{"everything", mcpconfig.Stdio, []string{"alwaysAllow", "autoApprove"}},
		{"remote", mcpconfig.HTTP, nil},
		{"old", mcpconfig.SSE, nil},
		{"typed", mcpconfig.HTTP, nil},
		{"tuned", mcpconfig.Stdio, nil},
		{"off", mcpconfig.Stdio, nil},
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

func TestServerValidate(t *testing.T) {
	tests := []struct {
		name  string
		entry mcpconfig.Server
		err   string
	}{
		{"x__y", mcpconfig.Server{Command: "a"}, "single '_'"},
		{"a.b", mcpconfig.Server{Command: "a"}, "MCP server name"},
		{"ok", mcpconfig.Server{}, "give a command"},
		{"ok", mcpconfig.Server{Command: "a", URL: "http://h/mcp"}, "not url, headers or oauth"},
		{"ok", mcpconfig.Server{Command: "a", OAuth: &mcpconfig.OAuth{}}, "not url, headers or oauth"},
		{"ok", mcpconfig.Server{URL: "http://h/sse", OAuth: &mcpconfig.OAuth{}}, "oauth needs the streamable HTTP transport"},
		{"ok", mcpconfig.Server{URL: "http://h/mcp", OAuth: &mcpconfig.OAuth{CallbackPort: 70000}}, "oauth.callbackPort"},
		{"ok", mcpconfig.Server{URL: "http://h/mcp", OAuth: &mcpconfig.OAuth{ClientSecret: "s"}}, "needs oauth.clientId"},
		{"ok", mcpconfig.Server{URL: "http://h/mcp", OAuth: &mcpconfig.OAuth{ClientMetadataURL: "http://h/client.json"}}, "oauth.clientMetadataUrl"},
		{"ok", mcpconfig.Server{URL: "http://h/mcp", OAuth: &mcpconfig.OAuth{ClientMetadataURL: "https://h/"}}, "oauth.clientMetadataUrl"},
		{"ok", mcpconfig.Server{URL: "http://h/mcp", OAuth: &mcpconfig.OAuth{ClientID: "c", ClientSecret: "${S}", ClientMetadataURL: "https://h/toold.json", CallbackPort: 8765}}, ""},
		{"ok", mcpconfig.Server{URL: "http://h/mcp", OAuth: &mcpconfig.OAuth{ClientID: "c", Grant: "client_credentials"}}, "needs oauth.clientId and oauth.clientSecret"},
		{"ok", mcpconfig.Server{URL: "http://h/mcp", OAuth: &mcpconfig.OAuth{Grant: "password"}}, "want authorization_code or client_credentials"},
		{"ok", mcpconfig.Server{URL: "http://h/mcp", OAuth: &mcpconfig.OAuth{ClientID: "c", ClientSecret: "s", Grant: "client_credentials"}}, ""},
		{"ok", mcpconfig.Server{URL: "ftp://h/x"}, "want an http"},
		{"ok", mcpconfig.Server{Type: "sse", Command: "a"}, "needs a url"},
		{"ok", mcpconfig.Server{Type: "websocket", URL: "ws://h"}, "want stdio, http or sse"},
		{"ok", mcpconfig.Server{Command: "a", Toold: mcpconfig.ServerPolicy{Risk: "scary"}}, "toold.risk"},
		{"ok", mcpconfig.Server{URL: "${BASE}/mcp"}, ""},
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

func TestParseJSONWithoutServers(t *testing.T) {
	if _, err := mcpconfig.ParseJSON([]byte(`{"other": 1}`)); err == nil || !strings.Contains(err.Error(), "mcpServers") {
		t.Fatalf("no mcpServers: %v", err)
	}
}
