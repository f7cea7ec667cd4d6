package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/mcp/mcptest"
)

func TestParseMCPFlags(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfgFile, []byte("socket: /from/file.sock\nlisten: 127.0.0.1:7777\nmcp: {http: true}\n"), 0o644)
	tests := []struct {
		name           string
		args           []string
		socket, listen string
		http           bool
	}{
		{"no listeners by default", []string{"--config", cfgFile}, "-", "", false},
		{"--socket serves gRPC too", []string{"--config", cfgFile, "--socket", "x.sock"}, "x.sock", "", false},
		{"--listen=ADDR keeps /mcp", []string{"--config", cfgFile, "--listen=127.0.0.1:0"}, "-", "127.0.0.1:0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseMCPFlags(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config
			if c.Socket != tt.socket || c.Listen != tt.listen || c.MCP.HTTP != tt.http {
				t.Fatalf("socket %q listen %q http %v", c.Socket, c.Listen, c.MCP.HTTP)
			}
		})
	}
	m, err := parseFlags([]string{"--mcp-config", "servers.json", "--mcp-http"})
	if err != nil || m.Config.MCP.ConfigFile != "servers.json" || !m.Config.MCP.HTTP {
		t.Fatalf("--mcp-config, --mcp-http: %+v %v", m.Config.MCP, err)
	}
}

// `toold mcp` driven by the MCP Inspector's CLI, a real MCP client: it
// lists toold's tools and calls read_file; a failing call is an isError
// result (the Inspector exits 5). toold's MCP servers are offered too: here
// server-everything, so toold works as a gateway.
func TestToolDMCPWithInspector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	peers := mcptest.Require(t)
	bin := filepath.Join(t.TempDir(), "toold")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello over MCP\n"), 0o644)
	servers := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": peers.EverythingStdio()}})
	os.WriteFile(servers, b, 0o644)

	// The Inspector takes every option it knows, even after the target
	// command, so toold's flags here avoid its names (--log-level).
	inspector := func(t *testing.T, args ...string) (map[string]any, int, string) {
		t.Helper()
		full := append([]string{peers.Inspector, "--cli", "--format", "json", bin, "mcp", "--workspace", ws, "--mcp-config", servers}, args...)
		cmd := exec.Command(peers.Node, full...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // the Inspector keeps state there
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("inspector %v: exit %d, output not JSON: %v\n%s\n%s", args, code, err, stdout.String(), stderr.String())
		}
		return out, code, stderr.String()
	}

	t.Run("tools/list", func(t *testing.T) {
		out, code, stderr := inspector(t, "--method", "tools/list")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		res, _ := out["result"].(map[string]any)
		list, _ := res["tools"].([]any)
		byName := map[string]map[string]any{}
		for _, x := range list {
			tool := x.(map[string]any)
			byName[tool["name"].(string)] = tool
		}
		for _, want := range []string{"think", "read_file", "grep_search", "everything__echo"} {
			if byName[want] == nil {
				t.Fatalf("no %s among %d tools", want, len(list))
			}
		}
		if byName["file_operations"] != nil {
			t.Fatal("consolidated tool offered next to its operations")
		}
		ann, _ := byName["read_file"]["annotations"].(map[string]any)
		if ann["readOnlyHint"] != true {
			t.Fatalf("read_file annotations %v", ann)
		}
		schema, _ := byName["read_file"]["inputSchema"].(map[string]any)
		if props, _ := schema["properties"].(map[string]any); props["path"] == nil {
			t.Fatalf("read_file schema %v", schema)
		}
	})

	calls := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"read_file", []string{"--tool-name", "read_file", "--tool-arg", "path=hello.txt"}, 0, "hello over MCP"},
		{"missing file is isError", []string{"--tool-name", "read_file", "--tool-arg", "path=nope.txt"}, 5, "Error (EXECUTION_FAILED)"},
		{"outside the workspace is denied", []string{"--tool-name", "read_file", "--tool-arg", "path=../../etc/passwd"}, 5, "Error (DENIED)"},
		{"gateway to server-everything", []string{"--tool-name", "everything__echo", "--tool-arg", "message=via toold"}, 0, "Echo: via toold"},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			out, code, stderr := inspector(t, append([]string{"--method", "tools/call"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%v\n%s", code, c.code, out, stderr)
			}
			b, _ := json.Marshal(out)
			if !strings.Contains(string(b), c.contains) {
				t.Fatalf("result lacks %q: %s", c.contains, b)
			}
		})
	}
}
