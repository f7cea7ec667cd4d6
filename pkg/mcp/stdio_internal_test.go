package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/mcp/mcptest"
)

// FuzzDecodeMessages checks toold's stdio decoder against the SDK's own:
// for any single JSON value both accept or both refuse, and they accept the
// same message; a batch is its elements, each decoded as the SDK does.
func FuzzDecodeMessages(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ping"}]}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":7,"method":""}`,
		`{"jsonrpc":"1.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":true,"result":{}}`,
		`{"JSONRPC":"2.0","ID":1,"Result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"m"}]`,
		`[]`, `[1]`, `"x"`, `null`, `{}`,
		strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		line := []byte(strings.TrimSpace(string(data)))
		got, err := decodeMessages(line)
		var want []jsonrpc.Message
		var werr error
		var raws []json.RawMessage
		if line[0] == '[' && json.Unmarshal(line, &raws) == nil {
			if len(raws) == 0 {
				werr = errors.New("empty batch")
			}
			for _, raw := range raws {
				m, err := jsonrpc.DecodeMessage(raw)
				if err != nil {
					werr = err
					break
				}
				want = append(want, m)
			}
		} else {
			m, err := jsonrpc.DecodeMessage(line)
			want, werr = []jsonrpc.Message{m}, err
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s: toold's error %v, the SDK's %v", line, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: toold decoded %#v, the SDK %#v", line, got, want)
		}
	})
}

// startStdio connects to a shell script as a stdio server.
func startStdio(t *testing.T, script string, maxLine int, terminate time.Duration) *stdioConn {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	conn, err := (&stdioTransport{cmd: cmd, terminate: terminate, maxLine: maxLine}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := conn.(*stdioConn)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestStdioConnReads(t *testing.T) {
	long := strings.Repeat("y", 100<<10) // several times the reader's buffer
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":1}}`,
		``,
		`[{"jsonrpc":"2.0","id":2,"result":{}}, {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}]`,
		`{"jsonrpc":"2.0","id":"s","method":"ping","params":{"long":"` + long + `"}}` + "\r",
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"bad"}}`,
	}
	// The last message has no newline: the server exits after it.
	script := fmt.Sprintf("printf '%%s\\n' %s; printf '%%s' '%s'", shellQuote(lines), `{"jsonrpc":"2.0","id":4,"result":{}}`)
	c := startStdio(t, script, 0, time.Second)
	ctx := context.Background()
	var got []string
	for {
		m, err := c.Read(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("after %d messages: %v", len(got), err)
			}
			break
		}
		data, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(data))
	}
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":1}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`,
		`{"jsonrpc":"2.0","id":"s","method":"ping","params":{"long":"` + long + `"}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"bad"}}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %d messages, want %d:\n%.300q\n%.300q", len(got), len(want), got, want)
	}
}

func shellQuote(lines []string) string {
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = "'" + strings.ReplaceAll(l, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// A line that is too long, or not a message, ends the connection with an
// error; what came before it is read.
func TestStdioConnRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		max        int
		want       string
	}{
		{"too long", `{"jsonrpc":"2.0","id":2,"result":"` + strings.Repeat("x", 40<<10) + `"}`, 32 << 10, "maximum line length"},
		{"not JSON", `{"jsonrpc":"2.0","id":2,`, 0, "unmarshaling"},
		{"trailing data", `{"jsonrpc":"2.0","id":2,"result":{}} x`, 0, "trailing"},
		{"two messages on a line", `{"jsonrpc":"2.0","id":2,"result":{}}{"jsonrpc":"2.0","id":3,"result":{}}`, 0, "trailing"},
		{"empty batch", `[]`, 0, "empty batch"},
		{"too deep", strings.Repeat("[", 1001) + strings.Repeat("]", 1001), 0, "nesting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := fmt.Sprintf("printf '%%s\\n' %s; exec sleep 30", shellQuote([]string{`{"jsonrpc":"2.0","id":1,"result":{}}`, tc.line}))
			c := startStdio(t, script, tc.max, 10*time.Millisecond)
			if _, err := c.Read(context.Background()); err != nil {
				t.Fatalf("first message: %v", err)
			}
			_, err := c.Read(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// Writes from many goroutines reach the server as whole lines (cat echoes
// them back).
func TestStdioConnWrites(t *testing.T) {
	c := startStdio(t, "exec cat", 0, time.Second)
	ctx := context.Background()
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := c.Write(ctx, &jsonrpc.Request{ID: mustID(t, float64(i)), Method: "ping", Params: json.RawMessage(`{"pad":"` + strings.Repeat("p", 8<<10) + `"}`)}); err != nil {
				t.Error(err)
			}
		})
	}
	seen := map[int64]bool{}
	for range n {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := m.(*jsonrpc.Request)
		if !ok || r.Method != "ping" || len(r.Params) != 8<<10+10 {
			t.Fatalf("%#v", m)
		}
		seen[r.ID.Raw().(int64)] = true
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct messages, want %d", len(seen), n)
	}
	// Closing stdin ends cat: Close returns its exit, later calls the same,
	// and a write after it is refused.
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := c.Write(ctx, &jsonrpc.Request{Method: "x"}); err == nil {
		t.Fatal("a write after Close succeeded")
	}
	if _, err := c.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("read after Close: %v", err)
	}
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A server that ignores its stdin closing and SIGTERM is killed by Close,
// and a Read waiting on it returns.
func TestStdioConnCloseKills(t *testing.T) {
	c := startStdio(t, `trap "" TERM; exec sleep 60`, 0, 20*time.Millisecond)
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		read <- err
	}()
	err := c.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("close: %v, want the server killed", err)
	}
	if err := <-read; !errors.Is(err, io.EOF) {
		t.Fatalf("read: %v", err)
	}
}

// BenchmarkStdioTransport compares, in one run, the go-sdk's CommandTransport
// and toold's stdioTransport under the same go-sdk client calling
// server-everything's echo: time and allocations per call (the client's and
// the transport's, both in this process).
func BenchmarkStdioTransport(b *testing.B) {
	peers := mcptest.Require(b)
	cfg := peers.EverythingStdio()
	for _, tc := range []struct {
		name string
		tr   func(*exec.Cmd) sdk.Transport
	}{
		{"sdk", func(c *exec.Cmd) sdk.Transport {
			return &sdk.CommandTransport{Command: c, TerminateDuration: time.Second}
		}},
		{"toold", func(c *exec.Cmd) sdk.Transport { return &stdioTransport{cmd: c, terminate: time.Second} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, tc.tr(exec.Command(cfg.Command, cfg.Args...)), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			call := func() {
				if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "ping"}}); err != nil {
					b.Fatal(err)
				}
			}
			for range 300 { // node warms up what it runs often
				call()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				call()
			}
		})
	}
}
