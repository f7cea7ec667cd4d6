package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/mcp/mcptest"
)

// The TCP listener serves gRPC and, with mcp.http, MCP at /mcp on the same
// port, both behind the token. The MCP side is driven by the MCP
// Inspector's CLI; gRPC by the generated client.
func TestMCPOverHTTPSharesTheTCPPort(t *testing.T) {
	peers := mcptest.Require(t)
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Listen = "127.0.0.1:0"
		c.Token = "s3cret"
		c.MCP.HTTP = true
	}))
	os.WriteFile(filepath.Join(d.Workspace, "notes.txt"), []byte("shared port\n"), 0o644)
	addr := d.Main.TCPAddr()

	// gRPC over TCP still works, token and all.
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "bearer s3cret")
	if _, err := pb.NewToolServiceClient(conn).ListTools(ctx, &pb.ListToolsRequest{}); err != nil {
		t.Fatalf("gRPC on the shared port: %v", err)
	}

	url := "http://" + addr + "/mcp"
	tests := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"tools/list", []string{"--header", "Authorization: Bearer s3cret", "--method", "tools/list"}, 0, `"read_file"`},
		{"read_file", []string{"--header", "Authorization: Bearer s3cret", "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=notes.txt"}, 0, "shared port"},
		{"isError", []string{"--header", "Authorization: Bearer s3cret", "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=missing.txt"}, 5, "EXECUTION_FAILED"},
		// A 401 makes the Inspector want OAuth, which --stored-auth-only
		// refuses: exit 3, auth_required.
		{"no token", []string{"--stored-auth-only", "--method", "tools/list"}, 3, "auth_required"},
		{"wrong token", []string{"--stored-auth-only", "--header", "Authorization: Bearer guess", "--method", "tools/list"}, 3, "auth_required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{peers.Inspector, "--cli", "--format", "json", url, "--transport", "http", "--connect-timeout", "10000"}, tt.args...)
			cmd := exec.Command(peers.Node, args...)
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // the Inspector keeps state there
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || !strings.Contains(out.String(), tt.contains) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, tt.code, tt.contains, out.String())
			}
		})
	}

	// A plain HTTP request without the token is refused; other paths are
	// not served.
	for path, want := range map[string]int{"/mcp": http.StatusUnauthorized, "/other": http.StatusNotFound} {
		resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("POST %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// MCP servers from the config file (Claude Desktop's format) join the
// registry at start, after the built-ins; the AdminService lists them.
func TestMCPServersFromConfigFile(t *testing.T) {
	peers := mcptest.Require(t)
	file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	b, _ := json.Marshal(map[string]any{
		"globalShortcut": "",
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": peers.Node, "args": []string{peers.Everything, "stdio"}, "autoApprove": []string{}},
		},
	})
	os.WriteFile(file, b, 0o644)
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.MCP.ConfigFile = file }))
	resp, err := d.Client.ListTools(context.Background(), &pb.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range resp.GetTools() {
		names = append(names, tool.GetName())
	}
	first := -1
	for i, n := range names {
		if strings.HasPrefix(n, "everything__") {
			if first < 0 {
				first = i
			}
		} else if first >= 0 {
			t.Fatalf("built-in %s after MCP tools: %v", n, names)
		}
	}
	if first <= 0 {
		t.Fatalf("no MCP tools after the built-ins: %v", names)
	}
	list, err := pb.NewAdminServiceClient(d.Conn).ListMcpServers(d.AsOperator(context.Background()), &pb.ListMcpServersRequest{})
	if err != nil || len(list.GetServers()) != 1 || list.GetServers()[0].GetState() != pb.McpServerState_MCP_SERVER_STATE_CONNECTED {
		t.Fatalf("ListMcpServers: %v %v", list, err)
	}
}

// BenchmarkMCPEcho compares, in one run, server-everything's echo called
// through toold (an ExecuteTool stream over the unix socket; toold calls
// the server over stdio) with the same tool called directly with the go-sdk
// (ClientSession.CallTool over stdio to its own server-everything).
func BenchmarkMCPEcho(b *testing.B) {
	peers := mcptest.Require(b)
	b.Run("direct go-sdk", func(b *testing.B) {
		entry := peers.EverythingStdio()
		cmd := exec.Command(entry.Command, entry.Args...)
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd, TerminateDuration: 100 * time.Millisecond}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			b.StopTimer()
			cs.Close()
		}()
		ctx := context.Background()
		b.ResetTimer()
		for i := range b.N {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": fmt.Sprint("m", i)}})
			if err != nil || res.IsError {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("through toold", func(b *testing.B) {
		d := daemontest.Start(b, daemontest.WithConfig(func(c *config.Config) {
			c.MCP.Servers = map[string]mcpconfig.Server{"everything": peers.EverythingStdio()}
		}))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := d.Client.ExecuteTool(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{OmitExecuting: true}}}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Recv(); err != nil { // Welcome
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			id := fmt.Sprint(i)
			err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
				CallId: id, Name: "everything__echo",
				Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: fmt.Sprintf(`{"message":"m%d"}`, i)},
			}}})
			if err != nil {
				b.Fatal(err)
			}
			for {
				ev, err := s.Recv()
				if err != nil {
					b.Fatal(err)
				}
				if end := ev.GetEnd(); end != nil {
					if !end.GetResult().GetSuccess() {
						b.Fatal(end)
					}
					break
				}
			}
		}
		b.StopTimer()
		s.CloseSend()
		for {
			if _, err := s.Recv(); err != nil {
				break
			}
		}
	})
}
