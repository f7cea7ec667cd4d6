package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/mcp/mcptest"
	"github.com/toold/toold/pkg/testenv"
)

// rpcClient sends 2026-07-28 JSON-RPC requests to toold's MCP server, as a
// client of the tasks extension would (go-sdk's client has no tasks): over
// HTTP to /mcp, or over one stdio session.
type rpcClient interface {
	call(t *testing.T, method string, params map[string]any) (result map[string]any, rpcErr *rpcError)
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// tasksCaps are the capabilities of a client that declares the tasks
// extension and can show an elicitation.
var tasksCaps = map[string]any{"elicitation": map[string]any{"form": map[string]any{}},
	"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}

// withMeta adds the per-request _meta of 2026-07-28 to params.
func withMeta(params map[string]any, caps map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range params {
		out[k] = v
	}
	out["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	return out
}

type response struct {
	ID     int             `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *rpcError       `json:"error"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// httpRPC posts each request to /mcp with the headers of 2026-07-28.
type httpRPC struct {
	url, token string
	caps       map[string]any
	id         int
	// header overrides a header of the next request (Mcp-Name).
	header map[string]string
}

func (c *httpRPC) call(t *testing.T, method string, params map[string]any) (map[string]any, *rpcError) {
	t.Helper()
	c.id++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": withMeta(params, c.caps)})
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	c.header = nil
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	// A JSON body, or an SSE stream whose last data line is the response.
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last string
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				last = strings.TrimSpace(d)
			}
		}
		raw = []byte(last)
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: HTTP %d, not a JSON-RPC response: %v: %s", method, resp.StatusCode, err, raw)
	}
	if r.Error == nil && resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d with a result: %s", method, resp.StatusCode, raw)
	}
	return r.Result, r.Error
}

// stdioRPC is one stdio session of the daemon's MCP server (what `toold
// mcp` serves), written to and read as newline-delimited JSON-RPC.
type stdioRPC struct {
	mu   sync.Mutex
	in   io.WriteCloser
	out  *bufio.Scanner
	id   int
	caps map[string]any
}

func newStdioRPC(t *testing.T, d *daemontest.Daemon) *stdioRPC {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Main.ServeMCP(ctx, sr, sw) }()
	t.Cleanup(func() {
		cancel()
		cw.Close()
		cr.Close()
		<-served
	})
	sc := bufio.NewScanner(cr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	return &stdioRPC{in: cw, out: sc, caps: tasksCaps}
}

func (c *stdioRPC) call(t *testing.T, method string, params map[string]any) (map[string]any, *rpcError) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": withMeta(params, c.caps)})
	if _, err := c.in.Write(append(body, '\n')); err != nil {
		t.Fatal(err)
	}
	for c.out.Scan() {
		var r response
		if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
			t.Fatalf("not JSON-RPC: %s", c.out.Bytes())
		}
		if r.Method != "" || r.ID != c.id { // a notification
			continue
		}
		return r.Result, r.Error
	}
	t.Fatalf("%s: the session ended: %v", method, c.out.Err())
	return nil, nil
}

// pollTask polls tasks/get until cond holds.
func pollTask(t *testing.T, c rpcClient, id, what string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	var last map[string]any
	testenv.Poll(t, 60*time.Second, what, func() bool {
		res, rerr := c.call(t, "tasks/get", map[string]any{"taskId": id})
		if rerr != nil {
			t.Fatalf("tasks/get: %+v", rerr)
		}
		last = res
		return cond(res)
	})
	return last
}

func taskStatus(s string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["status"] == s }
}

// startTask calls run_command and returns the task it became.
func startTask(t *testing.T, c rpcClient, command string) string {
	t.Helper()
	res, rerr := c.call(t, "tools/call", map[string]any{"name": "run_command", "arguments": map[string]any{"command": command}})
	if rerr != nil {
		t.Fatalf("tools/call: %+v", rerr)
	}
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" || res["status"] != "working" || res["ttlMs"] == nil || res["content"] != nil {
		t.Fatalf("tools/call of a declaring client: not a task: %v", res)
	}
	return id
}

func resultText(m map[string]any) string {
	r, _ := m["result"].(map[string]any)
	content, _ := r["content"].([]any)
	var b strings.Builder
	for _, c := range content {
		if c, ok := c.(map[string]any); ok {
			b.WriteString(fmt.Sprint(c["text"]))
		}
	}
	return b.String()
}

// The tasks extension over real HTTP and stdio against a real toold: a
// command run as a task and polled to its output; a task canceled while
// its command runs (the process is gone); an approval asked inside a task
// (input_required) answered through tasks/update, and one declined (the
// command's effect happens only when approved); a client that does not
// declare the extension gets the result in the request, and no tasks
// methods.
func TestMCPTasks(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Listen = "127.0.0.1:0"
		c.Token = "s3cret"
		c.MCP.HTTP = true
		c.ApprovalMode = "auto" // a delete asks
	}))
	n := time.Now().UnixNano() % 1e6
	clients := map[string]func() rpcClient{
		"http": func() rpcClient {
			return &httpRPC{url: "http://" + d.Main.TCPAddr() + "/mcp", token: "s3cret", caps: tasksCaps}
		},
		"stdio": func() rpcClient { return newStdioRPC(t, d) },
	}
	for _, transport := range []string{"http", "stdio"} {
		c := clients[transport]()
		t.Run(transport+"/output", func(t *testing.T) {
			n++
			marker := fmt.Sprintf("task-marker-%d", n)
			id := startTask(t, c, "echo "+marker)
			done := pollTask(t, c, id, "the task to complete", taskStatus("completed"))
			if !strings.Contains(resultText(done), marker) || done["resultType"] != "complete" {
				t.Fatalf("completed task: %v", done)
			}
		})
		t.Run(transport+"/cancel", func(t *testing.T) {
			n++
			arg := fmt.Sprintf("1000.%d%d", os.Getpid(), n) // unique: another run of the package may be running
			id := startTask(t, c, "sleep "+arg)
			var pid int
			testenv.Poll(t, 30*time.Second, "the command's process", func() bool { pid = pidByArgs(arg); return pid != 0 })
			ack, rerr := c.call(t, "tasks/cancel", map[string]any{"taskId": id})
			if rerr != nil || ack["resultType"] != "complete" || ack["taskId"] != nil {
				t.Fatalf("tasks/cancel: %v %+v", ack, rerr)
			}
			pollTask(t, c, id, "the task to be cancelled", taskStatus("cancelled"))
			testenv.Poll(t, 30*time.Second, fmt.Sprintf("the canceled command (pid %d) to end", pid), func() bool { return pidByArgs(arg) == 0 })
			// Cancel again: the same ack.
			if ack, rerr := c.call(t, "tasks/cancel", map[string]any{"taskId": id}); rerr != nil || ack["resultType"] != "complete" {
				t.Fatalf("tasks/cancel of an ended task: %v %+v", ack, rerr)
			}
		})
		for _, decision := range []string{"approve once", "deny"} {
			t.Run(transport+"/approval/"+decision, func(t *testing.T) {
				n++
				victim := fmt.Sprintf("victim-%d.txt", n)
				path := filepath.Join(d.Workspace, victim)
				if err := os.WriteFile(path, []byte("canary"), 0o644); err != nil {
					t.Fatal(err)
				}
				id := startTask(t, c, "rm -f "+victim)
				asked := pollTask(t, c, id, "the task to ask for approval", taskStatus("input_required"))
				reqs, _ := asked["inputRequests"].(map[string]any)
				if len(reqs) != 1 {
					t.Fatalf("input_required without one input request: %v", asked)
				}
				var key string
				for k, v := range reqs {
					key = k
					q, _ := v.(map[string]any)
					params, _ := q["params"].(map[string]any)
					if q["method"] != "elicitation/create" || !strings.Contains(fmt.Sprint(params["message"]), "rm -f "+victim) {
						t.Fatalf("input request: %v", q)
					}
				}
				if _, err := os.Stat(path); err != nil {
					t.Fatalf("the command ran before the approval: %v", err)
				}
				ack, rerr := c.call(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
					key: map[string]any{"action": "accept", "content": map[string]any{"decision": decision, "reason": "not this file"}},
				}})
				if rerr != nil || ack["resultType"] != "complete" {
					t.Fatalf("tasks/update: %v %+v", ack, rerr)
				}
				done := pollTask(t, c, id, "the task to complete", taskStatus("completed"))
				_, statErr := os.Stat(path)
				res, _ := done["result"].(map[string]any)
				if decision == "deny" {
					if statErr != nil || res["isError"] != true || !strings.Contains(resultText(done), "not this file") {
						t.Fatalf("denied: file %v, result %v", statErr, done)
					}
					return
				}
				if !os.IsNotExist(statErr) || res["isError"] == true {
					t.Fatalf("approved: file %v, result %v", statErr, done)
				}
			})
		}
		t.Run(transport+"/unknown task", func(t *testing.T) {
			if _, rerr := c.call(t, "tasks/get", map[string]any{"taskId": "toold-task-forged"}); rerr == nil || rerr.Code != -32602 {
				t.Fatalf("unknown task: %+v", rerr)
			}
			for _, m := range []string{"tasks/result", "tasks/list"} { // removed by the extension
				if _, rerr := c.call(t, m, map[string]any{"taskId": "toold-task-forged"}); rerr == nil || rerr.Code != -32601 {
					t.Fatalf("%s: %+v", m, rerr)
				}
			}
		})
	}
	t.Run("http/without the extension", func(t *testing.T) {
		c := &httpRPC{url: "http://" + d.Main.TCPAddr() + "/mcp", token: "s3cret", caps: map[string]any{}}
		res, rerr := c.call(t, "tools/call", map[string]any{"name": "run_command", "arguments": map[string]any{"command": "echo in-the-request"}})
		if rerr != nil || res["taskId"] != nil || !strings.Contains(fmt.Sprint(res["content"]), "in-the-request") {
			t.Fatalf("a call of a client without tasks: %v %+v", res, rerr)
		}
		if _, rerr := c.call(t, "tasks/get", map[string]any{"taskId": "toold-task-x"}); rerr == nil || rerr.Code != -32021 || !strings.Contains(string(rerr.Data), "io.modelcontextprotocol/tasks") {
			t.Fatalf("tasks/get without the extension: %+v", rerr)
		}
	})
	t.Run("http/Mcp-Name must name the task", func(t *testing.T) {
		c := clients["http"]().(*httpRPC)
		id := startTask(t, c, "echo headers")
		c.header = map[string]string{"Mcp-Name": "toold-task-other"}
		if _, rerr := c.call(t, "tasks/get", map[string]any{"taskId": id}); rerr == nil || rerr.Code != -32020 {
			t.Fatalf("mismatched Mcp-Name: %+v", rerr)
		}
		pollTask(t, c, id, "the task to complete", taskStatus("completed"))
	})
}

// A tool of one of toold's MCP servers (server-everything, over stdio) is a
// long call too: through toold as a gateway it runs as a task, its progress
// becomes the task's statusMessage, it completes with the server's result,
// and a cancelled one settles to cancelled while the server stays usable.
func TestMCPTasksOfUpstreamTools(t *testing.T) {
	peers := mcptest.Require(t)
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.Listen = "127.0.0.1:0"
		c.Token = "s3cret"
		c.MCP.HTTP = true
		c.ApprovalMode = "yolo"
		c.MCP.Servers = map[string]mcpconfig.Server{"everything": peers.EverythingStdio()}
	}))
	c := &httpRPC{url: "http://" + d.Main.TCPAddr() + "/mcp", token: "s3cret", caps: tasksCaps}
	call := func(name string, args map[string]any) string {
		res, rerr := c.call(t, "tools/call", map[string]any{"name": name, "arguments": args})
		id, _ := res["taskId"].(string)
		if rerr != nil || res["resultType"] != "task" || id == "" {
			t.Fatalf("tools/call %s: not a task: %v %+v", name, res, rerr)
		}
		return id
	}
	id := call("everything__echo", map[string]any{"message": "upstream-task-marker"})
	if done := pollTask(t, c, id, "the echo task to complete", taskStatus("completed")); !strings.Contains(resultText(done), "upstream-task-marker") {
		t.Fatalf("echo task: %v", done)
	}
	long := call("everything__trigger-long-running-operation", map[string]any{"duration": 60, "steps": 120})
	pollTask(t, c, long, "the long operation's progress as statusMessage", func(m map[string]any) bool {
		msg, _ := m["statusMessage"].(string)
		return m["status"] == "working" && msg != ""
	})
	if _, rerr := c.call(t, "tasks/cancel", map[string]any{"taskId": long}); rerr != nil {
		t.Fatalf("tasks/cancel: %+v", rerr)
	}
	pollTask(t, c, long, "the long operation to be cancelled", taskStatus("cancelled"))
	id = call("everything__echo", map[string]any{"message": "after-the-cancel"})
	if done := pollTask(t, c, id, "the next task to complete", taskStatus("completed")); !strings.Contains(resultText(done), "after-the-cancel") {
		t.Fatalf("after the cancel: %v", done)
	}
}
