package daemon_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// mcpWriteRequest is a 2026-07-28 tools/call of write_file creating name in
// the workspace: if the file appears, toold acted for whoever sent it.
func mcpWriteRequest(t *testing.T, url, name string) *http.Request {
	t.Helper()
	const era = "2026-07-28"
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "write_file", "arguments": map[string]any{"path": name, "content": "pwned\n"},
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    era,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "attacker", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}}})
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", era)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "write_file")
	return req
}

// Issue 25 items 4 and 8, /mcp on loopback attacked as a web page and a
// local process would: DNS rebinding (foreign, look-alike and null
// origins, a rebinding name in Host with no Origin), the token missing,
// wrong, another toold's, in the query string, in another scheme, padded,
// or sent as a cookie. Each request asks toold to write a file in the
// workspace; the file never appears. The right token from a loopback
// origin writes it (the attempts prove something).
func TestAttackMCPOverHTTP(t *testing.T) {
	const token = "tok-0123456789abcdef0123456789abcdef"
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.Listen = "127.0.0.1:0"
		c.Token = token
		c.MCP.HTTP = true
	}))
	// Another toold with a token of its own (from its mcp.token file).
	other := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Listen = "127.0.0.1:0"
		c.MCP.HTTP = true
	}))
	otherTok, err := os.ReadFile(filepath.Join(other.Main.Config.StateDir, "mcp.token"))
	if err != nil {
		t.Fatal(err)
	}
	addr := d.Main.TCPAddr()
	url := "http://" + addr + "/mcp"
	_, port, _ := strings.Cut(addr, ":")
	attempts := []struct {
		name string
		edit func(r *http.Request)
	}{
		{"no token", func(r *http.Request) {}},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer guess") }},
		{"another toold's token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(otherTok))) }},
		{"token prefix", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token[:len(token)-1]) }},
		{"token with a suffix", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token+"x") }},
		{"empty bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer ") }},
		{"token in the query", func(r *http.Request) {
			r.URL.RawQuery = "token=" + token + "&access_token=" + token + "&authorization=Bearer%20" + token
		}},
		{"token as a cookie", func(r *http.Request) { r.Header.Set("Cookie", "token="+token+"; authorization=Bearer "+token) }},
		{"token as basic auth", func(r *http.Request) { r.SetBasicAuth("toold", token) }},
		{"token in another header", func(r *http.Request) {
			r.Header.Set("X-Api-Key", token)
			r.Header.Set("Proxy-Authorization", "Bearer "+token)
		}},
		{"rebinding origin, no token", func(r *http.Request) {
			r.Header.Set("Origin", "http://rebind.example:"+port)
			r.Host = "rebind.example:" + port
		}},
		{"rebinding host, same-origin GET shape", func(r *http.Request) {
			r.Host = "rebind.example:" + port
			r.Header.Set("Sec-Fetch-Site", "same-origin")
		}},
		// With the token (as if a page had it): the origin alone refuses.
		{"foreign origin with the token", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set("Origin", "http://rebind.example:"+port)
		}},
		{"null origin with the token", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set("Origin", "null")
		}},
		{"look-alike loopback origin with the token", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set("Origin", "http://127.0.0.1.rebind.example:"+port)
		}},
		{"localhost subdomain origin with the token", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set("Origin", "http://localhost.rebind.example:"+port)
		}},
		{"file origin with the token", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set("Origin", "file://")
		}},
		{"cross-site fetch metadata with the token", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set("Sec-Fetch-Site", "cross-site")
		}},
		{"simple CORS request with the token", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set("Origin", "https://rebind.example")
			r.Header.Set("Content-Type", "text/plain")
		}},
	}
	for i, a := range attempts {
		name := fmt.Sprintf("via-mcp-%02d", i)
		req := mcpWriteRequest(t, url, name)
		a.edit(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if _, err := os.Stat(filepath.Join(d.Workspace, name)); err == nil {
			t.Errorf("%s: toold wrote the file (HTTP %d):\n%s", a.name, resp.StatusCode, b)
		}
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: HTTP %d, want 401 or 403:\n%s", a.name, resp.StatusCode, b)
		}
	}
	// The control: the token from a loopback origin writes the file.
	req := mcpWriteRequest(t, url, "via-mcp-ok")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Origin", "http://"+addr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if _, err := os.Stat(filepath.Join(d.Workspace, "via-mcp-ok")); err != nil {
		t.Fatalf("the control request did not write (HTTP %d): %s", resp.StatusCode, b)
	}
}

// mcpAttackScript posts a tools/call of write_file (creating argv[3] in the
// workspace) to /mcp at argv[1] with the token argv[2], the way argv[4]
// says: "direct" (no proxy), "proxy" (through HTTP_PROXY, as an ordinary
// request), "connect" (a CONNECT tunnel through HTTP_PROXY to toold's
// port), "handoff" (connect, then fork: the parent exits and its child,
// re-parented, sends the request on the inherited socket), "exec" (connect,
// then exec a fresh python that finds the socket as fd 3 and sends), or
// "passfd" (connect, pass the socket over a unix socketpair to a
// setsid'd process and close it). It prints "STATUS <first line>" or
// "ERROR <why>".
const mcpAttackScript = `
import json, os, socket, sys, time, urllib.parse
url, token, name, how = sys.argv[1:5]
u = urllib.parse.urlsplit(url)
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "write_file", "arguments": {"path": name, "content": "pwned\n"},
    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientInfo": {"name": "a", "version": "1"},
              "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
def request(target):
    return (("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
             "Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n"
             "Mcp-Method: tools/call\r\nMcp-Name: write_file\r\nContent-Length: %d\r\nConnection: close\r\n\r\n")
            % (target, u.netloc, token, len(body))).encode() + body
def send(s, target="/mcp"):
    s.settimeout(20)
    s.sendall(request(target))
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    print("STATUS", data.split(b"\r\n")[0].decode(errors="replace"), flush=True)
def proxy():
    p = urllib.parse.urlsplit(os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy") or "")
    if not p.hostname:
        raise Exception("no proxy")
    return socket.create_connection((p.hostname, p.port))
try:
    if how == "direct":
        send(socket.create_connection((u.hostname, u.port)))
    elif how == "proxy":
        send(proxy(), url)
    elif how == "connect":
        s = proxy()
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (u.netloc, u.netloc)).encode())
        line = s.recv(4096).split(b"\r\n")[0]
        if b" 200 " not in line + b" ":
            raise Exception("CONNECT refused: " + line.decode(errors="replace"))
        send(s)
    elif how == "handoff":
        s = socket.create_connection((u.hostname, u.port))
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(0.5)
                send(s)
            os._exit(0)
        os._exit(0)
    elif how == "exec":
        s = socket.create_connection((u.hostname, u.port))
        os.dup2(s.fileno(), 3)
        os.set_inheritable(3, True)
        os.execv(sys.executable, [sys.executable, "-c",
            "import socket, sys\n" + "request=None\n" + open(__file__).read().split("#SENDER")[0].split("try:")[0] +
            "\nsend(socket.socket(fileno=3))", url, token, name, "x"])
    elif how == "passfd":
        a, b = socket.socketpair()
        if os.fork() == 0:
            os.setsid()
            a.close()
            msg, fds, _, _ = socket.recv_fds(b, 16, 1)
            time.sleep(0.5)
            send(socket.socket(fileno=fds[0]))
            os._exit(0)
        s = socket.create_connection((u.hostname, u.port))
        socket.send_fds(a, [b"x"], [s.fileno()])
        s.close()
        time.sleep(3)
except Exception as e:
    print("ERROR", e, flush=True)
#SENDER
`

// Issue 25 item 4, /mcp from toold's own commands: a command that knows
// the token (the worst case) posts a write_file to /mcp — through the
// egress proxy as a request or a CONNECT tunnel, directly (sandboxed: its
// own network namespace; with the sandbox off: on toold's loopback), from
// a process that hands its connected socket to a setsid'd grandchild and
// exits, across an exec, or over SCM_RIGHTS to another session's process.
// toold never writes the file.
func TestAttackMCPFromCommands(t *testing.T) {
	python := requireTool(t, "python3")
	for _, mode := range []string{"auto", "off"} {
		t.Run("sandbox "+mode, func(t *testing.T) {
			if mode == "auto" {
				sandboxed(t)
			}
			d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
				c.ApprovalMode = "yolo"
				c.Listen = "127.0.0.1:0"
				c.MCP.HTTP = true
				c.Terminal.Sandbox = mode
			}))
			// /mcp's token, from the state directory (no --token): the
			// command is given it, as if it had found it.
			tok, err := os.ReadFile(filepath.Join(d.Main.Config.StateDir, "mcp.token"))
			if err != nil {
				t.Fatal(err)
			}
			token := strings.TrimSpace(string(tok))
			script := filepath.Join(t.TempDir(), "mcp-attack.py")
			if err := os.WriteFile(script, []byte(mcpAttackScript), 0o644); err != nil {
				t.Fatal(err)
			}
			url := "http://" + d.Main.TCPAddr() + "/mcp"
			x := newSession(t, d)
			ran := 0
			for i, how := range []string{"direct", "proxy", "connect", "handoff", "exec", "passfd"} {
				name := fmt.Sprintf("via-mcp-cmd-%s-%d", mode, i)
				cmd := fmt.Sprintf("%s %s %s %s %s %s", python, script, url, token, name, how)
				if how == "handoff" || how == "passfd" {
					cmd += "; sleep 2" // the request is sent by an orphan
				}
				res, _ := x.call(fmt.Sprint("c", i), "run_command", jsonArgs(map[string]any{"command": cmd, "timeout": 60}), approveOnce)
				out := text(res)
				t.Logf("%s: %s", how, strings.TrimSpace(out))
				if strings.Contains(out, "STATUS") || strings.Contains(out, "ERROR") {
					ran++
				}
				if _, err := os.Stat(filepath.Join(d.Workspace, name)); err == nil {
					t.Errorf("%s: toold wrote the file for its own command:\n%s", how, out)
				}
				if strings.Contains(out, " 200 ") {
					t.Errorf("%s: /mcp answered its own command 200:\n%s", how, out)
				}
			}
			if ran < 4 {
				t.Fatalf("the attacks did not run (%d reported)", ran)
			}
		})
	}
}
