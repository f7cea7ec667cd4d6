package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostileServerEnv, set, makes the test binary a hostile stdio MCP server
// (hostileServer) instead of running tests.
const hostileServerEnv = "TOOLD_TEST_HOSTILE_MCP"

func init() {
	if mode := os.Getenv(hostileServerEnv); mode != "" {
		hostileServer(mode)
		os.Exit(0)
	}
}

// hostileServer answers initialize and tools/list like a server (any other
// request: method not found); its
// answer to each tools/call comes after a flood: notifications, responses
// to ids never sent (numbers and strings), a server-to-client request
// with an unknown method, blank lines.
func hostileServer(mode string) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
	}
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(m.Params, &p)
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"protocolVersion": p.ProtocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "hostile", "version": "1"}}})
		case "tools/list":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"tools": []any{map[string]any{
				"name": "echo", "inputSchema": map[string]any{"type": "object"}}}}})
		case "tools/call":
			for i := range 20000 {
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": strings.Repeat("n", i%200)}})
				if i%20 == 0 {
					send(map[string]any{"jsonrpc": "2.0", "id": 900000 + i, "result": map[string]any{"content": []any{}}})
					send(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("never-%d", i), "error": map[string]any{"code": -32000, "message": "x"}})
					out.WriteString("\n\r\n")
				}
				if mode == "requests" && i%100 == 0 {
					send(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("srv-%d", i), "method": "no/such/method", "params": map[string]any{}})
				}
			}
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "ANSWER"}}}})
		default:
			if len(m.ID) > 0 && m.Method != "" { // server/discover and the like: not known here
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			}
		}
		out.Flush()
	}
}

// A hostile server floods each tools/call with 20,000 notifications,
// 2,000 responses to ids toold never sent, blank lines and (second mode)
// 200 requests of an unknown method: the call still gets its own answer,
// or a typed error, within the deadline; Close ends the server; the
// connection leaves no goroutine.
func TestStdioHostileFlood(t *testing.T) {
	for _, mode := range []string{"flood", "requests"} {
		t.Run(mode, func(t *testing.T) {
			stdioLeakCheck(t)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), hostileServerEnv+"="+mode)
			cmd.Stderr = os.Stderr
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "attack", Version: "1"}, nil).Connect(ctx, &stdioTransport{cmd: cmd, terminate: 100 * time.Millisecond}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{}})
				if ctx.Err() != nil {
					t.Fatalf("call %d: no answer within the deadline: %v", i, err)
				}
				if err != nil {
					t.Logf("call %d: %v (the connection refused the flood)", i, err)
					break
				}
				if len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "ANSWER" {
					t.Fatalf("call %d: %#v, want the server's own answer", i, res.Content)
				}
			}
			if err := cs.Close(); err != nil {
				t.Logf("close: %v", err)
			}
			if cmd.ProcessState == nil {
				t.Fatal("the server was not waited for")
			}
		})
	}
}
