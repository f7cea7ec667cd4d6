package mcp_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/mcp"
)

// exchange is one step of a stdio session: a line the client sends and how
// many lines it then reads (-1: until the server closes its end).
type exchange struct {
	send  string
	lines int
}

// serve runs an SDK server over the transport tr makes from the server's
// ends of two pipes, plays steps as the client, and returns what the
// client read at each step ("EOF" once the server closed its end).
func serve(t *testing.T, tr func(io.ReadCloser, io.WriteCloser) sdk.Transport, steps []exchange) []string {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	srv := sdk.NewServer(&sdk.Implementation{Name: "ioconn-test", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, _ *sdk.CallToolRequest, in map[string]any) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "<&>"}}}, nil, nil
	})
	ss, err := srv.Connect(context.Background(), tr(sr, sw), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cw.Close()
		ss.Close()
		cr.Close()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(cr)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- strings.TrimSpace(l)
		}
	}()
	var got []string
	for _, s := range steps {
		if _, err := io.WriteString(cw, s.send+"\n"); err != nil {
			got = append(got, "write: closed")
			continue
		}
		var out []string
		for n := 0; s.lines < 0 || n < s.lines; n++ {
			select {
			case l, ok := <-lines:
				if !ok {
					out = append(out, "EOF")
					n = s.lines
					if s.lines < 0 {
						n = 0
					}
				} else {
					out = append(out, l)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no answer to %s after %q", s.send, out)
			}
			if len(out) > 0 && out[len(out)-1] == "EOF" {
				break
			}
		}
		got = append(got, strings.Join(out, "\n"))
	}
	return got
}

// TestIOTransportAsSDK plays the same stdio sessions against an SDK
// server over the SDK's IOTransport and over toold's, and wants the same
// lines back: batches answered as one batch in order, refused (the
// connection ends) once 2025-06-18 or later is negotiated or when an id
// repeats; an empty batch, bad JSON, a bad version tag and too deep a
// nesting end the connection.
func TestIOTransportAsSDK(t *testing.T) {
	const (
		init0325 = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
		init0618 = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
		inited   = `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`
	)
	sessions := map[string][]exchange{
		"batch before 2025-06-18": {
			{init0325, 1}, {inited, 0},
			{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"echo","arguments":{}}}]`, 1},
			{`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, 1},
			{`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, 1},
			{`{"jsonrpc":"2.0","id":5,"method":"ping"}`, 1},
		},
		"batch after 2025-06-18": {
			{init0618, 1}, {inited, 0},
			{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 1},
			{`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, -1},
		},
		"batch repeating an id": {
			{init0325, 1}, {inited, 0},
			{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -1},
		},
		"empty batch":      {{init0325, 1}, {`[]`, -1}},
		"not json":         {{init0325, 1}, {`{"jsonrpc":}`, -1}},
		"bad version tag":  {{init0325, 1}, {`{"jsonrpc":"1.0","id":1,"method":"ping"}`, -1}},
		"nested too deep":  {{init0325, 1}, {`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}}`, -1}},
		"blank lines":      {{init0325, 1}, {"\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 1}},
		"crlf":             {{init0325 + "\r", 1}, {`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\r", 1}},
		"trailing garbage": {{init0325, 1}, {`{"jsonrpc":"2.0","id":1,"method":"ping"} x`, -1}},
	}
	sdkIO := func(r io.ReadCloser, w io.WriteCloser) sdk.Transport { return &sdk.IOTransport{Reader: r, Writer: w} }
	ours := func(r io.ReadCloser, w io.WriteCloser) sdk.Transport { return &mcp.IOTransport{Reader: r, Writer: w} }
	for name, steps := range sessions {
		t.Run(name, func(t *testing.T) {
			want, got := serve(t, sdkIO, steps), serve(t, ours, steps)
			for i := range steps {
				if got[i] != want[i] {
					t.Errorf("after %.80s:\n got %s\nwant %s", steps[i].send, got[i], want[i])
				}
			}
		})
	}
}

// TestIOTransportBatchWithNotification: a batch's notifications get no
// response; its requests' responses come as one batch. (The SDK's own
// IOTransport answers no such batch: its session hangs.)
func TestIOTransportBatchWithNotification(t *testing.T) {
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	got := serve(t, func(r io.ReadCloser, w io.WriteCloser) sdk.Transport { return &mcp.IOTransport{Reader: r, Writer: w} }, []exchange{
		{init, 1},
		{`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, 0},
		{`[{"jsonrpc":"2.0","method":"notifications/x-test"},{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x-test"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, 1},
		{`[{"jsonrpc":"2.0","method":"notifications/x-test"}]`, 0},
		{`{"jsonrpc":"2.0","id":3,"method":"ping"}`, 1},
	})
	want := []string{got[0], "", `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]`, "", `{"jsonrpc":"2.0","id":3,"result":{}}`}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: got %s, want %s", i, got[i], want[i])
		}
	}
}

// TestIOTransportLineLimit: a message longer than MaxLineLength ends the
// connection; one at the limit is read.
func TestIOTransportLineLimit(t *testing.T) {
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", 3000) + `"}}}`
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	for _, c := range []struct {
		max  int
		want string
	}{
		{max: len(ping) + 1, want: `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{max: 2048, want: "EOF"},
	} {
		got := serve(t, func(r io.ReadCloser, w io.WriteCloser) sdk.Transport {
			return &mcp.IOTransport{Reader: r, Writer: w, MaxLineLength: c.max}
		}, []exchange{{init, 1}, {ping, 1}})
		if got[1] != c.want {
			t.Errorf("MaxLineLength %d: got %q, want %q", c.max, got[1], c.want)
		}
	}
}
