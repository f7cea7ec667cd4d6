package mcpserver_test

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/mcpserver"
	"github.com/toold/toold/pkg/tools"
)

// BenchmarkServeStdioCall is one tools/call served over stdio through real
// pipes (os.Pipe, as `toold mcp` is run): the client writes the request
// line and reads the answer line, as little as a client can do, so that
// the bytes and allocations per op are the server's.
func BenchmarkServeStdioCall(b *testing.B) {
	reg := tools.NewRegistry()
	if err := reg.Register(simple("echo", tools.RiskLow, func(_ context.Context, c *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		s, _ := c.Args["text"].(string)
		return &tools.Result{Text: s}, nil
	})); err != nil {
		b.Fatal(err)
	}
	svc, err := executor.New(executor.Config{Registry: reg, Authorizer: allowAll{}})
	if err != nil {
		b.Fatal(err)
	}
	srv := mcpserver.New(mcpserver.Options{Executor: svc, Registry: reg, Version: "bench"})
	defer srv.Close()
	sr, cw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cr, sw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeStdio(ctx, sr, sw) }()
	defer func() {
		cw.Close()
		cancel()
		<-served
		cr.Close()
	}()
	in := bufio.NewReaderSize(cr, 64<<10)
	send := func(line []byte) {
		if _, err := cw.Write(line); err != nil {
			b.Fatal(err)
		}
	}
	recv := func() []byte {
		line, err := in.ReadSlice('\n')
		if err != nil {
			b.Fatalf("reading the answer: %v", err)
		}
		return line
	}
	send([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"))
	recv()
	send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n"))
	const head, tail = `{"jsonrpc":"2.0","id":`, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the benchmark"}}}` + "\n"
	req := make([]byte, 0, 256)
	call := func(id int) {
		req = append(strconv.AppendInt(append(req[:0], head...), int64(id), 10), tail...)
		send(req)
		if line := recv(); len(line) < 40 {
			b.Fatalf("answer %q", line)
		}
	}
	for i := 1; i <= 100; i++ { // warm: pools and the executor's first conversation
		call(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call(1000 + i)
	}
}
