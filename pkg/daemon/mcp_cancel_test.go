package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// connectMCPStdio connects a go-sdk client to one stdio session of the
// daemon's MCP server (what `toold mcp` serves on stdin and stdout) at the
// protocol revision era.
func connectMCPStdio(t *testing.T, d *daemontest.Daemon, era string) *sdk.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Main.ServeMCP(ctx, sr, sw) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "cancel-test", Version: "1"}, nil).
		Connect(context.Background(), &sdk.IOTransport{Reader: cr, Writer: cw}, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		cw.Close()
		<-served
	})
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		t.Fatalf("negotiated %s, want %s", got, era)
	}
	return cs
}

// A client that gives up on a running run_command kills the command, over
// stdio and over HTTP, in both protocol eras: the go-sdk client's context
// canceled (notifications/cancelled on stdio and in 2025-11-25 sessions;
// at 2026-07-28 over HTTP it closes the request's stream, and the notice
// it also sends names a request the stateless server cannot tie to the
// call), and a 2026-07-28 client that only closes its stream, as that
// revision asks (Claude Code does so). The session (or, stateless, the
// endpoint) serves the next call.
func TestMCPCancelKillsTheCommand(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Listen = "127.0.0.1:0"
		c.Token = "s3cret"
		c.MCP.HTTP = true
		c.ApprovalMode = "yolo"
	}))
	n := time.Now().UnixNano() % 1e6
	for _, transport := range []string{"stdio", "http"} {
		for _, era := range mcpEras {
			t.Run(transport+"/"+era, func(t *testing.T) {
				var cs *sdk.ClientSession
				if transport == "stdio" {
					cs = connectMCPStdio(t, d, era)
				} else {
					cs = connectMCPHTTP(t, d, "s3cret", era, nil)
				}
				n++
				arg := fmt.Sprintf("1000.%d%d", os.Getpid(), n) // sleep's unique argument (another run of the package may be running), to find its process
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				called := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_command",
						Arguments: map[string]any{"command": "sleep " + arg}, Meta: sdk.Meta{"progressToken": "k" + arg}})
					called <- err
				}()
				var pid int
				testenv.Poll(t, 30*time.Second, "the command's process", func() bool { pid = pidByArgs(arg); return pid != 0 })
				cancel()
				if err := <-called; err == nil {
					t.Fatal("a canceled call returned no error to the client")
				}
				testenv.Poll(t, 30*time.Second, fmt.Sprintf("the canceled command (pid %d) to end", pid), func() bool { return pidByArgs(arg) == 0 })
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "echo still-serving"}})
				if err != nil || res.IsError {
					t.Fatalf("after the cancel: %v %v", res, err)
				}
			})
		}
	}
	t.Run("http/2026-07-28/stream closed without a notice", func(t *testing.T) {
		n++
		cancelByClosingTheStream(t, d, fmt.Sprintf("1000.%d", n))
	})
}

// cancelByClosingTheStream posts a 2026-07-28 tools/call of `sleep arg` to
// /mcp, waits for the command's process, closes the request (the
// connection with it) and waits for the process to end.
func cancelByClosingTheStream(t *testing.T, d *daemontest.Daemon, arg string) {
	t.Helper()
	const era = "2026-07-28"
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "run_command", "arguments": map[string]any{"command": "sleep " + arg},
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    era,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "closing-client", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+d.Main.TCPAddr()+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer s3cret")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", era)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "run_command")
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	var pid int
	testenv.Poll(t, 30*time.Second, "the command's process", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the call ended before it was canceled: %v", err)
		default:
		}
		pid = pidByArgs(arg)
		return pid != 0
	})
	cancel()
	<-done
	testenv.Poll(t, 30*time.Second, fmt.Sprintf("the command (pid %d) to end once its client closed the stream", pid), func() bool { return pidByArgs(arg) == 0 })
	cs := connectMCPHTTP(t, d, "s3cret", era, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "echo still-serving"}})
	if err != nil || res.IsError {
		t.Fatalf("after the cancel: %v %v", res, err)
	}
}
