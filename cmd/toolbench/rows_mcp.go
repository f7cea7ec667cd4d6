// Rows that compare toold with the MCP peers: read_file against
// server-filesystem (row 3) and an MCP tool called through toold (row 8).

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	pb "github.com/toold/toold/gen/toold/v1"
)

// peers are the third-party MCP servers, pinned in testdata/mcp and
// installed by `make mcp-peers`.
type peers struct {
	node, everything, filesystem string
}

func (b *bench) findPeers() (*peers, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not installed")
	}
	mods := filepath.Join(b.peersDir, "node_modules", "@modelcontextprotocol")
	p := &peers{
		node:       node,
		everything: filepath.Join(mods, "server-everything", "dist", "index.js"),
		filesystem: filepath.Join(mods, "server-filesystem", "dist", "index.js"),
	}
	for _, f := range []string{p.everything, p.filesystem} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("MCP peers are not installed (make mcp-peers): %v", err)
		}
	}
	return p, nil
}

// writeConfig writes a toold YAML config into the temp dir.
func (b *bench) writeConfig(name string, cfg map[string]any) (string, error) {
	j, err := json.Marshal(cfg) // JSON is YAML
	if err != nil {
		return "", err
	}
	p := filepath.Join(b.tmp, name+".yaml")
	return p, os.WriteFile(p, j, 0o600)
}

// mcpClient connects the go-sdk to a stdio server, as a user would.
func mcpClient(ctx context.Context, name string, args ...string) (*sdk.ClientSession, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "toolbench", Version: "1"}, nil)
	cmd := exec.Command(name, args...)
	return client.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
}

func resultText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// stripNumbers undoes read_file's line numbering ("     1\tline").
func stripNumbers(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if _, rest, ok := strings.Cut(line, "\t"); ok {
			b.WriteString(rest)
		}
	}
	return b.String()
}

// Row 3: read_file of a 4 KB and a 1 MB file vs server-filesystem over
// stdio (called with the go-sdk) and vs os.ReadFile in-process.
func (b *bench) rowReadFile(ctx context.Context, ws string) []*Row {
	var rows []*Row
	p, perr := b.findPeers()
	files := map[string]int{"small.txt": 4 << 10, "large.txt": 1 << 20}
	for name, size := range files {
		var sb strings.Builder
		for i := 0; sb.Len() < size; i++ {
			fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog\n", i)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(sb.String()[:size-1]+"\n"), 0o644); err != nil {
			return []*Row{{ID: "read", Title: "3. read_file", Kind: Latency, Error: err.Error()}}
		}
	}
	cfg, err := b.writeConfig("read", map[string]any{"approval_mode": "yolo",
		"output": map[string]any{"read_bytes": 4 << 20, "read_lines": 1 << 20, "line_chars": 1 << 20}})
	if err != nil {
		return []*Row{{ID: "read", Title: "3. read_file", Kind: Latency, Error: err.Error()}}
	}
	d, err := b.startToold(ctx, ws, "--config", cfg)
	if err != nil {
		return []*Row{{ID: "read", Title: "3. read_file", Kind: Latency, Error: err.Error()}}
	}
	defer d.stop()
	var fs *sdk.ClientSession
	if perr == nil {
		fs, perr = mcpClient(ctx, p.node, p.filesystem, ws)
		if fs != nil {
			defer fs.Close()
		}
	}
	for _, c := range []struct{ id, title, file string }{
		{"read-4k", "3a. read_file 4 KB", "small.txt"},
		{"read-1m", "3b. read_file 1 MB", "large.txt"},
	} {
		row := &Row{ID: c.id, Title: c.title, Kind: Latency, Target: "p50 ≤ 0.2× server-filesystem",
			check: func(r *Row) bool { return r.Ratio <= 0.2 }}
		rows = append(rows, row)
		if perr != nil {
			row.Error = perr.Error()
			continue
		}
		want, _ := os.ReadFile(filepath.Join(ws, c.file))
		tc, err := openConv(ctx, d.client, &pb.Hello{OmitExecuting: true})
		if err != nil {
			row.Error = err.Error()
			continue
		}
		var got, peerGot string
		tooldCall := timed(func() error {
			res, err := tc.call("read_file", fmt.Sprintf(`{"path":%q}`, c.file))
			if err != nil {
				return err
			}
			if !res.GetSuccess() || len(res.GetContent()) == 0 {
				return fmt.Errorf("read_file failed: %v", res.GetError())
			}
			got = res.GetContent()[0].GetText()
			return nil
		})
		peerCall := timed(func() error {
			r, err := fs.CallTool(ctx, &sdk.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": filepath.Join(ws, c.file)}})
			if err != nil {
				return err
			}
			if r.IsError {
				return fmt.Errorf("server-filesystem: %s", resultText(r))
			}
			peerGot = resultText(r)
			return nil
		})
		n := b.iters(400)
		if _, _, err := rounds(20, 2, tooldCall, peerCall); err != nil {
			row.Error = err.Error()
			continue
		}
		dt, dp, err := rounds(n, 20, tooldCall, peerCall)
		tc.close()
		if err != nil {
			row.Error = err.Error()
			continue
		}
		var dr []time.Duration
		for i := 0; i < n; i++ {
			t0 := time.Now()
			if _, err := os.ReadFile(filepath.Join(ws, c.file)); err != nil {
				row.Error = err.Error()
			}
			dr = append(dr, time.Since(t0))
		}
		row.Toold = latencies("toold", dt)
		row.Base = []Measure{latencies("server-filesystem (go-sdk, stdio)", dp), latencies("os.ReadFile (the limit)", dr)}
		switch {
		case stripNumbers(got) != string(want):
			row.Error = fmt.Sprintf("toold's content differs from the file (%d vs %d bytes)", len(stripNumbers(got)), len(want))
		case peerGot != string(want):
			row.Error = fmt.Sprintf("server-filesystem's content differs from the file (%d vs %d bytes)", len(peerGot), len(want))
		default:
			row.Verified = fmt.Sprintf("same %d bytes from all three (toold's line numbers removed)", len(want))
		}
	}
	return rows
}

// Row 8: an MCP tool (server-everything's echo) called through toold vs
// directly with the go-sdk. Two more sides bound what a gRPC front can
// reach, in the same run: the hop (toolbench serve-mcp-proxy, a bare gRPC
// server calling the same server with the go-sdk and answering with
// toold's End) and the hop sending toold's Start first (as toold does for
// a call that may wait, while the server works). A second toold, without
// audit and history, shows their share.
func (b *bench) rowMCP(ctx context.Context, ws string) []*Row {
	row := &Row{ID: "mcp-echo", Title: "8. MCP tool (server-everything `echo`) through toold", Kind: Latency, Target: "p50 ≤ 1.5× direct go-sdk",
		check: func(r *Row) bool { return r.Ratio <= 1.5 }}
	fail := func(err error) []*Row {
		row.Error = err.Error()
		return []*Row{row}
	}
	p, err := b.findPeers()
	if err != nil {
		return fail(err)
	}
	servers := map[string]any{"everything": map[string]any{"command": p.node, "args": []string{p.everything, "stdio"}}}
	cfg, err := b.writeConfig("mcp", map[string]any{"approval_mode": "yolo", "mcp": map[string]any{"mcpServers": servers}})
	if err != nil {
		return fail(err)
	}
	// A second toold without audit and history: their share, same run.
	cfgOff, err := b.writeConfig("mcp-off", map[string]any{"approval_mode": "yolo", "mcp": map[string]any{"mcpServers": servers},
		"audit": map[string]any{"enabled": false}, "history": map[string]any{"backend": "off"}})
	if err != nil {
		return fail(err)
	}
	off, err := b.startToold(ctx, ws, "--config", cfgOff)
	if err != nil {
		return fail(err)
	}
	defer off.stop()
	// Started last: with -profiles, the profiles are this one's.
	d, err := b.startToold(ctx, ws, "--config", cfg)
	if err != nil {
		return fail(err)
	}
	defer d.stop()
	direct, err := mcpClient(ctx, p.node, p.everything, "stdio")
	if err != nil {
		return fail(err)
	}
	defer direct.Close()
	const echoArgs = `{"message":"ping"}`
	evs, err := captureCallOf(ctx, d.client, &pb.Hello{OmitExecuting: true}, "everything__echo", echoArgs)
	if err != nil {
		return fail(err)
	}
	hop, err := b.startServer("serve-mcp-proxy", evs[len(evs)-1:], "--", p.node, p.everything, "stdio")
	if err != nil {
		return fail(err)
	}
	defer hop.stop()
	var hopTrace []string
	if b.trace && b.profiles != "" {
		if err := os.MkdirAll(b.profiles, 0o755); err != nil {
			return fail(err)
		}
		hopTrace = []string{"-trace", filepath.Join(b.profiles, row.ID+".hop-start.trace")}
	}
	hopStart, err := b.startServer("serve-mcp-proxy", evs, append(hopTrace, "--", p.node, p.everything, "stdio")...)
	if err != nil {
		return fail(err)
	}
	defer hopStart.stop()
	tc, err := openConv(ctx, d.client, &pb.Hello{OmitExecuting: true})
	if err != nil {
		return fail(err)
	}
	defer tc.close()
	hc, err := openConv(ctx, hop.client, nil)
	if err != nil {
		return fail(err)
	}
	defer hc.close()
	hsc, err := openConv(ctx, hopStart.client, nil)
	if err != nil {
		return fail(err)
	}
	defer hsc.close()
	oc, err := openConv(ctx, off.client, &pb.Hello{OmitExecuting: true})
	if err != nil {
		return fail(err)
	}
	defer oc.close()
	got := make([]string, 5)
	echo := func(c *conv, i int) func() (time.Duration, error) {
		return timed(func() error {
			res, err := c.call("everything__echo", echoArgs)
			if err != nil {
				return err
			}
			if !res.GetSuccess() || len(res.GetContent()) == 0 {
				return fmt.Errorf("echo failed: %v", res.GetError())
			}
			got[i] = res.GetContent()[0].GetText()
			return nil
		})
	}
	directCall := timed(func() error {
		r, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "ping"}})
		if err != nil {
			return err
		}
		got[1] = resultText(r)
		return nil
	})
	sides := []func() (time.Duration, error){echo(tc, 0), directCall, echo(hc, 2), echo(hsc, 3), echo(oc, 4)}
	n := b.iters(1000)
	if _, err := roundsN(50, 2, sides...); err != nil {
		return fail(err)
	}
	ds, err := roundsN(n, 20, sides...)
	if err != nil {
		return fail(err)
	}
	// The round trip of a no-op call on the same toold and stream, in the
	// same run: what toold's forwarding adds is the echo's time less this.
	think := timed(func() error {
		res, err := tc.call("think", thinkArgs)
		if err == nil && !res.GetSuccess() {
			err = fmt.Errorf("think failed: %v", res.GetError())
		}
		return err
	})
	dthink, _, err := rounds(n/2, 10, think, directCall)
	if err != nil {
		return fail(err)
	}
	row.Toold = latencies("toold", ds[0])
	row.Base = []Measure{latencies("direct go-sdk", ds[1]),
		latencies("the hop (bare gRPC server calling the go-sdk, End only)", ds[2]),
		latencies("the hop sending toold's Start first", ds[3]),
		latencies("toold without audit and history", ds[4]),
		latencies("no-op call (think) on the same toold", dthink)}
	if slices.ContainsFunc(got, func(s string) bool { return s != got[0] }) {
		row.Error = fmt.Sprintf("results differ: %q", got)
	} else {
		direct := row.Base[0].P50
		row.Verified = fmt.Sprintf("same text %q all ways; the hop is %.2f× direct, with Start %.2f×; echo through toold less its no-op round trip: %s (direct: %s)",
			got[0], row.Base[1].P50/direct, row.Base[2].P50/direct, ms(row.Toold.P50-row.Base[4].P50), ms(direct))
	}
	return []*Row{row}
}

// mcpProxy is the hop alone: a bare gRPC server that calls each ToolCall's
// tool (SERVER__TOOL, the server part dropped) on one go-sdk session, on
// the goroutine that received it, and answers with the replies, the last
// (an End) carrying the tool's text. The replies before it are sent before
// the call.
type mcpProxy struct {
	pb.UnimplementedToolServiceServer
	cs      *sdk.ClientSession
	replies []*pb.ServerEvent
}

func (p *mcpProxy) ExecuteTool(s pb.ToolService_ExecuteToolServer) error {
	for {
		m, err := s.Recv()
		if err != nil {
			return nil
		}
		call := m.GetCall()
		if call == nil {
			continue
		}
		for _, reply := range p.replies[:len(p.replies)-1] {
			r := proto.Clone(reply).(*pb.ServerEvent)
			r.CallId = call.GetCallId()
			if err := s.Send(r); err != nil {
				return err
			}
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(call.GetArgumentsJson()), &args); err != nil {
			return err
		}
		_, name, _ := strings.Cut(call.GetName(), "__")
		res, err := p.cs.CallTool(s.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return err
		}
		end := proto.Clone(p.replies[len(p.replies)-1]).(*pb.ServerEvent)
		end.CallId = call.GetCallId()
		if c := end.GetEnd().GetResult().GetContent(); len(c) > 0 {
			c[0].Kind = &pb.Content_Text{Text: resultText(res)}
		}
		if err := s.Send(end); err != nil {
			return err
		}
	}
}

// serveMCPProxy is the serve-mcp-proxy mode: connect to the stdio MCP
// server given after the flags, then serve until SIGTERM.
func serveMCPProxy(args []string) error {
	fs := flag.NewFlagSet("serve-mcp-proxy", flag.ContinueOnError)
	sock := fs.String("socket", "", "unix socket to serve on")
	replyPath := fs.String("reply", "", "file with the ServerEvents to answer with (the last an End)")
	traceOut := fs.String("trace", "", "write an execution trace to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *traceOut != "" {
		f, err := os.Create(*traceOut)
		if err != nil {
			return err
		}
		if err := trace.Start(f); err != nil {
			return err
		}
		defer func() {
			trace.Stop()
			f.Close()
		}()
	}
	replies, err := readReplies(*replyPath)
	if err != nil {
		return err
	}
	if len(replies) == 0 || replies[len(replies)-1].GetEnd() == nil || fs.NArg() == 0 {
		return errors.New("need replies ending with an End, and the server's command")
	}
	cs, err := mcpClient(context.Background(), fs.Arg(0), fs.Args()[1:]...)
	if err != nil {
		return err
	}
	defer cs.Close()
	return serveUntilSignal(*sock, &mcpProxy{cs: cs, replies: replies})
}
