package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

var toolctlOnce struct {
	sync.Once
	path string
	err  error
}

// buildToolctl builds toolctl once per test binary, outside the tree.
func buildToolctl(t *testing.T) string {
	t.Helper()
	toolctlOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolctl-bin")
		if err != nil {
			toolctlOnce.err = err
			return
		}
		p := filepath.Join(dir, "toolctl")
		if out, err := exec.Command("go", "build", "-o", p, "github.com/toold/toold/cmd/toolctl").CombinedOutput(); err != nil {
			toolctlOnce.err = fmt.Errorf("go build toolctl: %v\n%s", err, out)
			return
		}
		toolctlOnce.path = p
	})
	if toolctlOnce.err != nil {
		t.Fatal(toolctlOnce.err)
	}
	return toolctlOnce.path
}

// testToken is the bearer token of the daemons below. The attacks present
// it too (as if it had leaked): the peer check holds without it.
const testToken = "s3cret-token"

// commandDaemon starts toold in YOLO (every command runs without asking)
// with the sandbox off, so that only the control plane's own check stands
// between a command and toold: the unix socket, a TCP listener sharing
// /mcp, and the debug listener.
func commandDaemon(t *testing.T) *daemontest.Daemon {
	t.Helper()
	return daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.Listen = "127.0.0.1:0"
		c.Token = testToken
		c.MCP.HTTP = true
		c.DebugAddr = "127.0.0.1:0"
		c.Terminal.Sandbox = "off"
	}))
}

// tokenSession is newSession presenting testToken.
func tokenSession(t *testing.T, d *daemontest.Daemon) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "bearer "+testToken)
	s, err := d.Client.ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, s: s}
}

// Issue 25 item 4, live: the processes of commands toold runs — a
// foreground command, a background process that double-forks and calls
// setsid, and what is typed into a terminal session — try to drive toold
// with toolctl, grpcurl and curl on every listener, and are refused with
// PERMISSION_DENIED (403 over HTTP): the file each attempt would have
// written through toold does not exist. The same clients run by the test
// (not a command) are served.
func TestCommandsCannotReachTooldEndToEnd(t *testing.T) {
	grpcurl := requireTool(t, "grpcurl")
	curl := requireTool(t, "curl")
	toolctl := buildToolctl(t)
	d := commandDaemon(t)
	sock, addr, debugAddr := d.Socket, d.Main.TCPAddr(), d.Main.DebugAddr()
	out := t.TempDir() // where commands leave what their clients printed

	writeCall := func(canary string) string {
		return fmt.Sprintf(`{"hello":{"conversationId":"attack-%[1]s"}}
{"call":{"callId":"1","name":"write_file","argumentsJson":"{\"path\":\"%[1]s\",\"content\":\"pwned\"}"}}`, canary)
	}
	mcpInit := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	attempts := []struct {
		name, script, canary string
		want                 string // in what the client printed
	}{
		{"toolctl on the socket", fmt.Sprintf("%s --socket %s --token %s call --yes write_file path=pwned-toolctl content=x", toolctl, sock, testToken), "pwned-toolctl", "PermissionDenied"},
		{"grpcurl on the socket", fmt.Sprintf("printf '%%s' '%s' | %s -plaintext -H 'authorization: bearer %s' -d @ unix:%s toold.v1.ToolService/ExecuteTool", writeCall("pwned-grpcurl-unix"), grpcurl, testToken, sock), "pwned-grpcurl-unix", "PermissionDenied"},
		{"grpcurl on TCP", fmt.Sprintf("printf '%%s' '%s' | %s -plaintext -H 'authorization: bearer %s' -d @ %s toold.v1.ToolService/ExecuteTool", writeCall("pwned-grpcurl-tcp"), grpcurl, testToken, addr), "pwned-grpcurl-tcp", "PermissionDenied"},
		{"grpcurl health on TCP", fmt.Sprintf("%s -plaintext %s grpc.health.v1.Health/Check", grpcurl, addr), "", "PermissionDenied"},
		{"curl /mcp", fmt.Sprintf("%s -sS -w '\\nstatus %%{http_code}' -X POST -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d '%s' http://%s/mcp", curl, testToken, mcpInit, addr), "", "status 403"},
		{"curl the debug listener", fmt.Sprintf("%s -sS -w '\\nstatus %%{http_code}' http://%s/debug/pprof/cmdline", curl, debugAddr), "", "status 403"},
	}
	x := tokenSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "agent"}}})
	// The judge may ask about a command that names paths outside the
	// workspace; the person approves (as people who are asked about
	// everything do): the boundary must hold anyway.
	for i, a := range attempts {
		res, _ := x.call(fmt.Sprint("fg", i), "run_command", commandArgs(a.script+" 2>&1", nil), approveOnce)
		got := text(res)
		if !strings.Contains(got, a.want) || !strings.Contains(got, "toold refuses this client") {
			t.Errorf("%s: the command's client was not refused (want %q):\n%s", a.name, a.want, got)
		}
		if a.canary != "" && exists(filepath.Join(d.Workspace, a.canary)) {
			t.Errorf("%s: %s was written through toold", a.name, a.canary)
		}
	}

	// A background process that double-forks and calls setsid: its
	// client runs in a process whose parent exited.
	{
		log := filepath.Join(out, "bg")
		inner := fmt.Sprintf("%s --socket %s --token %s call --yes write_file path=pwned-bg content=x >%s 2>&1; echo done >%s.done", toolctl, sock, testToken, log, log)
		script := fmt.Sprintf("( setsid sh -c '%s' & ) ; exit 0", inner)
		res, _ := x.call("bg", "run_command", mustJSON(t, map[string]any{"command": script, "is_background": true}), approveOnce)
		if !res.GetSuccess() {
			t.Fatalf("background: %v", res)
		}
		eventually(t, "the orphan's client to end", func() bool { return exists(log + ".done") })
		got, _ := os.ReadFile(log)
		if !strings.Contains(string(got), "toold refuses this client") {
			t.Fatalf("the orphan was not refused:\n%s", got)
		}
		if exists(filepath.Join(d.Workspace, "pwned-bg")) {
			t.Fatal("pwned-bg was written through toold")
		}
	}

	// What is typed into a terminal session.
	{
		log := filepath.Join(out, "term")
		res, _ := x.call("open", "create_session", `{}`)
		sid, _ := res.GetStructured().AsMap()["session_id"].(string)
		if sid == "" {
			t.Fatalf("create_session: %v", res)
		}
		// Type only once the shell reads its input (readline drops
		// typeahead it receives while it starts).
		x.call("ready", "send_input", mustJSON(t, map[string]any{"session_id": sid, "data": "echo ready-$((1+1))\n"}))
		var shown strings.Builder
		eventually(t, "the shell's answer", func() bool {
			r, _ := x.call(fmt.Sprint("read-", time.Now().UnixNano()), "get_output", fmt.Sprintf(`{"session_id":%q,"wait_ms":200,"raw":true}`, sid))
			shown.WriteString(text(r))
			return strings.Contains(shown.String(), "ready-2")
		})
		line := fmt.Sprintf("%s --socket %s --token %s call --yes write_file path=pwned-term content=x >%s 2>&1; echo done >%s.done\n", toolctl, sock, testToken, log, log)
		x.call("type", "send_input", mustJSON(t, map[string]any{"session_id": sid, "data": line}), approveOnce)
		eventually(t, "the session's client to end", func() bool { return exists(log + ".done") })
		got, _ := os.ReadFile(log)
		if !strings.Contains(string(got), "toold refuses this client") {
			t.Fatalf("the session's client was not refused:\n%s", got)
		}
		if exists(filepath.Join(d.Workspace, "pwned-term")) {
			t.Fatal("pwned-term was written through toold")
		}
	}

	// Each refusal was audited.
	if dir := d.Main.Audit().Dir(); dir != "" {
		eventually(t, "the refusals in the audit log", func() bool {
			recs, err := audit.Tail(dir, 1000)
			if err != nil {
				return false
			}
			n := 0
			for _, r := range recs {
				if r.Kind == audit.KindPeerRefused && r.Decision == "deny" && strings.Contains(r.Detail, "toold") {
					n++
				}
			}
			return n >= len(attempts)+2
		})
	}

	// The same clients run by the test itself are served.
	t.Run("normal clients", func(t *testing.T) {
		c := exec.Command(toolctl, "--socket", sock, "--token", testToken, "call", "write_file", "path=by-operator", "content=x")
		if b, err := c.CombinedOutput(); err != nil || !exists(filepath.Join(d.Workspace, "by-operator")) {
			t.Fatalf("toolctl from the test: %v\n%s", err, b)
		}
		for _, target := range []string{"unix:" + sock, addr} {
			if b, err := exec.Command(grpcurl, "-plaintext", "-H", "authorization: bearer "+testToken, target, "toold.v1.ToolService/ListTools").CombinedOutput(); err != nil {
				t.Fatalf("grpcurl %s from the test: %v\n%s", target, err, b)
			}
		}
		resp, err := http.Get("http://" + debugAddr + "/debug/pprof/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("debug listener from the test: %s", resp.Status)
		}
		req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(mcpInit))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden {
			t.Fatalf("/mcp from the test: %s", resp.Status)
		}
	})
}

// The debug listener never serves the token: /debug/pprof/cmdline shows
// the command line with --token's value redacted, in both spellings.
func TestDebugCmdlineRedactsToken(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.DebugAddr = "127.0.0.1:0" }))
	orig := os.Args
	os.Args = append(append([]string{}, orig...), "--token", "canary-token-1", "--token=canary-token-2", "--workspace", "/w")
	defer func() { os.Args = orig }()
	resp, err := http.Get("http://" + d.Main.DebugAddr() + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := string(b)
	if resp.StatusCode != http.StatusOK || strings.Contains(got, "canary-token") {
		t.Fatalf("cmdline (%s) shows the token: %q", resp.Status, got)
	}
	if !strings.Contains(got, "--token\x00REDACTED\x00--token=REDACTED\x00--workspace\x00/w") {
		t.Fatalf("cmdline is not the redacted command line: %q", got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Even where a rule lets tools and commands reach localhost, toold's own
// listeners stay out of reach through toold: web_fetch and the egress
// proxy refuse them (a connection toold made would come from toold itself,
// which the peer check accepts).
func TestTooldNotReachableThroughTooldEndToEnd(t *testing.T) {
	curl := requireTool(t, "curl")
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(`rules:
  - name: local
    decision: allow
    hosts: [localhost, 127.0.0.1]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.PolicyFile = policy
		c.Listen = "127.0.0.1:0"
		c.Token = testToken
		c.MCP.HTTP = true
		c.DebugAddr = "127.0.0.1:0"
		c.Terminal.Network = config.NetworkMode{Proxy: true}
	}))
	x := tokenSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "loop"}}})
	_, port, _ := strings.Cut(d.Main.TCPAddr(), ":")
	_, debugPort, _ := strings.Cut(d.Main.DebugAddr(), ":")
	for i, u := range []string{
		"http://localhost:" + port + "/mcp",
		"http://127.0.0.1:" + port + "/mcp",
		"http://127.0.0.1:" + debugPort + "/debug/pprof/cmdline",
	} {
		res, _ := x.call(fmt.Sprint("f", i), "web_fetch", mustJSON(t, map[string]any{"url": u}), approveOnce)
		if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED || !strings.Contains(res.GetError().GetMessage(), "toold's own listener") {
			t.Errorf("web_fetch %s: %v", u, res)
		}
		// --noproxy '': through the egress proxy even for loopback names.
		res, _ = x.call(fmt.Sprint("c", i), "run_command", commandArgs(curl+" --noproxy '' -sS -i "+u, nil), approveOnce)
		if out := text(res); !strings.Contains(out, "403") || strings.Contains(out, "toold.sock") || strings.Contains(out, "jsonrpc") {
			t.Errorf("curl %s through the proxy: %s", u, out)
		}
	}
}
