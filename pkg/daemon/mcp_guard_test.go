package daemon_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// /mcp is never served without a token: when toold has none of its own,
// /mcp takes the one in mcp.token in the state directory (made at start,
// 0600, kept across restarts), which the person's MCP hosts read.
func TestMCPHTTPWithoutATokenUsesTheTokenFile(t *testing.T) {
	state := t.TempDir()
	start := func(t *testing.T) *daemontest.Daemon {
		return daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
			c.Listen = "127.0.0.1:0"
			c.MCP.HTTP = true
			c.StateDir = state
		}))
	}
	initialize := func(t *testing.T, d *daemontest.Daemon, token string) int {
		req, _ := http.NewRequest("POST", "http://"+d.Main.TCPAddr()+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	var token string
	t.Run("first start", func(t *testing.T) {
		d := start(t)
		path := filepath.Join(state, daemon.MCPTokenFile)
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", path, fi, err)
		}
		b, _ := os.ReadFile(path)
		token = strings.TrimSpace(string(b))
		if got := initialize(t, d, ""); got != http.StatusUnauthorized {
			t.Fatalf("without the token: %d", got)
		}
		if got := initialize(t, d, token); got != http.StatusOK {
			t.Fatalf("with the file's token: %d", got)
		}
	})
	// A restarted toold keeps the token, so hosts configured with it work on.
	if got := initialize(t, start(t), token); got != http.StatusOK {
		t.Fatalf("after a restart, with the same token: %d", got)
	}
}

// A web page cannot reach /mcp: not by rebinding its DNS name to 127.0.0.1
// (its Host and Origin are its own), not from another origin, not without
// the token. Each attempt runs the whole attack — initialize, then a
// run_command that would create a canary file, in YOLO mode — and the
// effect is checked: the file does not exist. The same requests from a
// local client (no Origin, or a loopback one) with the token succeed, so
// the guard is what stops them.
func TestMCPHTTPRefusesWebPagesAndDNSRebinding(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Listen = "127.0.0.1:0"
		c.Token = "s3cret"
		c.MCP.HTTP = true
		c.ApprovalMode = "yolo"
	}))
	addr := d.Main.TCPAddr()
	_, port, _ := strings.Cut(addr, ":")
	attack := func(t *testing.T, host, origin, token, canary string) (status int) {
		t.Helper()
		post := func(body, session string) (*http.Response, string) {
			req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(body))
			req.Host = host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if origin != "" {
				req.Header.Set("Origin", origin)
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, string(b)
		}
		resp, _ := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`, "")
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode
		}
		session := resp.Header.Get("Mcp-Session-Id")
		post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
		resp, body := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"touch `+canary+`"}}}`, session)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/call: %d %s", resp.StatusCode, body)
		}
		return resp.StatusCode
	}
	tests := []struct {
		name, host, origin, token string
		status                    int
	}{
		{"DNS rebinding, with the token", "rebind.example:" + port, "http://rebind.example:" + port, "s3cret", http.StatusForbidden},
		{"DNS rebinding, no Origin", "rebind.example:" + port, "", "s3cret", http.StatusForbidden},
		{"another origin", addr, "https://evil.example", "s3cret", http.StatusForbidden},
		{"null origin", addr, "null", "s3cret", http.StatusForbidden},
		{"no token", addr, "", "", http.StatusUnauthorized},
		{"wrong token", addr, "", "guess", http.StatusUnauthorized},
		{"local client", addr, "", "s3cret", http.StatusOK},
		{"another local page", "localhost:" + port, "http://localhost:6274", "s3cret", http.StatusForbidden},
		{"its own loopback origin", "localhost:" + port, "http://localhost:" + port, "s3cret", http.StatusOK},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			canary := filepath.Join(d.Workspace, "canary-"+string(rune('a'+i)))
			got := attack(t, tt.host, tt.origin, tt.token, canary)
			if got != tt.status {
				t.Fatalf("status %d, want %d", got, tt.status)
			}
			_, err := os.Stat(canary)
			if ran := err == nil; ran != (tt.status == http.StatusOK) {
				t.Fatalf("canary created: %v, want %v", ran, tt.status == http.StatusOK)
			}
		})
	}
}
