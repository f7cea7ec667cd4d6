package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/service"
	"github.com/toold/toold/pkg/tools"
)

// fakeTool is a func-field fake tool.
type fakeTool struct {
	spec     tools.Spec
	describe func(*tools.Call) tools.Effect
	run      func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error)
}

func (f *fakeTool) Spec() tools.Spec { return f.spec }
func (f *fakeTool) Describe(c *tools.Call) tools.Effect {
	if f.describe != nil {
		return f.describe(c)
	}
	return tools.Effect{}
}
func (f *fakeTool) Run(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
	return f.run(ctx, c, s)
}

func simple(name, schema string, run func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error)) *fakeTool {
	return &fakeTool{
		spec: tools.Spec{Name: name, Source: "builtin", Operations: []tools.OperationSpec{{Name: name, Risk: tools.RiskLow, Schema: json.RawMessage(schema)}}},
		run:  run,
	}
}

// testTools are the tools the stream tests call.
func testTools(observed chan<- string) []tools.Tool {
	echo := simple("echo", `{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"}},"required":["text"],"additionalProperties":false}`,
		func(_ context.Context, c *tools.Call, _ *tools.Sink) (*tools.Result, error) {
			b, _ := json.Marshal(c.Args)
			return &tools.Result{Text: string(b), Structured: c.Args}, nil
		})
	echo.describe = func(c *tools.Call) tools.Effect { return tools.Effect{Display: "Echoing: " + c.Args["text"].(string)} }
	sleep := simple("sleep", `{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]}`,
		func(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
			var a struct{ MS int }
			_ = c.Bind(&a)
			_ = s.Progress("sleeping", 0)
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
				return &tools.Result{Text: "slept"}, nil
			case <-ctx.Done():
				if observed != nil {
					observed <- c.ID
				}
				return &tools.Result{Text: "partial"}, ctx.Err()
			}
		})
	boom := simple("boom", `{"type":"object"}`, func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
		panic("boom")
	})
	spew := simple("spew", `{"type":"object","properties":{"bytes":{"type":"integer"}},"required":["bytes"]}`,
		func(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
			var a struct{ Bytes int }
			_ = c.Bind(&a)
			buf := make([]byte, 4096)
			for sent := 0; sent < a.Bytes; {
				n := min(len(buf), a.Bytes-sent)
				for i := range buf[:n] {
					buf[i] = byte('a' + (sent+i)%26)
				}
				if err := s.Output(tools.Stdout, buf[:n]); err != nil {
					return nil, err
				}
				sent += n
			}
			return &tools.Result{Text: "done"}, nil
		})
	unclassified := simple("oops", `{"type":"object"}`, func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
		return nil, errors.New("secret internal detail /etc/shadow")
	})
	return []tools.Tool{&tools.Think{}, echo, sleep, boom, spew, unclassified}
}

type harness struct {
	t      testing.TB
	srv    *service.Server
	x      *executor.Executor
	gs     *grpc.Server
	client pb.ToolServiceClient
	spans  *tracetest.SpanRecorder
	served chan struct{}
	sock   string
}

// openConn opens a stream on a connection of its own, so that the test can
// break that connection (close it) under the stream.
func (h *harness) openConn(hello *pb.Hello) (*convo, *grpc.ClientConn) {
	h.t.Helper()
	conn, err := grpc.NewClient("unix://"+h.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { conn.Close() })
	saved := h.client
	h.client = pb.NewToolServiceClient(conn)
	defer func() { h.client = saved }()
	return h.open(hello), conn
}

// start serves a service on a temp unix socket and connects a client; its
// spans are recorded in harness.spans.
func start(t testing.TB, cfg any, ts ...tools.Tool) *harness {
	return startTraced(t, true, cfg, ts...)
}

// testConfig is an executor's configuration and the service's options.
type testConfig struct {
	executor.Config
	MaxMessageBytes   int
	KeepaliveInterval time.Duration
}

// startTraced is start; with traced false the service has no tracer (as a
// daemon without an exporter).
func startTraced(t testing.TB, traced bool, c any, ts ...tools.Tool) *harness {
	t.Helper()
	var tc testConfig
	switch c := c.(type) {
	case executor.Config:
		tc.Config = c
	case testConfig:
		tc = c
	default:
		t.Fatalf("start: config %T", c)
	}
	cfg := tc.Config
	if g, ok := cfg.Authorizer.(authz.Granter); ok && cfg.Granter == nil {
		cfg.Granter = g
	}
	if cfg.ResumeGrace == 0 {
		// Streams that drop end their calls at once, unless a test
		// resumes.
		cfg.ResumeGrace = -1
	}
	reg := tools.NewRegistry()
	if err := reg.Register(ts...); err != nil {
		t.Fatal(err)
	}
	cfg.Registry = reg
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	if traced {
		cfg.Tracer = tp.Tracer("test")
	}
	if cfg.Authorizer == nil {
		cfg.Authorizer = authz.AllowAll{}
	}
	x, err := executor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := service.New(x, service.Options{MaxMessageBytes: tc.MaxMessageBytes, KeepaliveInterval: tc.KeepaliveInterval})
	gs := grpc.NewServer(srv.GRPCServerOptions()...)
	pb.RegisterToolServiceServer(gs, srv)
	dir, err := os.MkdirTemp("", "toold-svc")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, x: x, gs: gs, spans: rec, served: make(chan struct{}), sock: sock}
	go func() { _ = gs.Serve(l); close(h.served) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	h.client = pb.NewToolServiceClient(conn)
	t.Cleanup(func() {
		conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		x.Shutdown(ctx)
		cancel()
		gs.Stop()
		<-h.served
		os.RemoveAll(dir)
	})
	return h
}

// convo is one ExecuteTool stream with a reader collecting every event.
type convo struct {
	t      testing.TB
	stream pb.ToolService_ExecuteToolClient
	cancel context.CancelFunc

	mu     sync.Mutex
	events []*pb.ServerEvent
	err    error // the stream's end: io.EOF or the status
	notify chan struct{}
	done   chan struct{}
}

func (h *harness) open(hello *pb.Hello) *convo {
	h.t.Helper()
	return h.openWith(hello)
}

// openWith is open with call options for the stream.
func (h *harness) openWith(hello *pb.Hello, opts ...grpc.CallOption) *convo {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := h.client.ExecuteTool(ctx, opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	c := &convo{t: h.t, stream: s, cancel: cancel, notify: make(chan struct{}, 1), done: make(chan struct{})}
	h.t.Cleanup(func() { cancel(); <-c.done })
	go func() {
		defer close(c.done)
		for {
			ev, err := s.Recv()
			c.mu.Lock()
			if err != nil {
				c.err = err
			} else {
				c.events = append(c.events, ev)
			}
			c.mu.Unlock()
			select {
			case c.notify <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	if hello != nil {
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}})
	}
	return c
}

func (c *convo) send(m *pb.ClientMessage) {
	c.t.Helper()
	if err := c.stream.Send(m); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

func (c *convo) call(id, name, args string) {
	c.t.Helper()
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: name, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: args}}}})
}

func (c *convo) callTimeout(id, name, args string, d time.Duration) {
	c.t.Helper()
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: name,
		Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: args}, Timeout: durationpb.New(d)}}})
}

// waitFor blocks until pred holds over the events seen so far.
func (c *convo) waitFor(what string, pred func([]*pb.ServerEvent) bool) []*pb.ServerEvent {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		evs := append([]*pb.ServerEvent(nil), c.events...)
		err := c.err
		c.mu.Unlock()
		if pred(evs) {
			return evs
		}
		if err != nil {
			c.t.Fatalf("stream ended (%v) before %s; events: %v", err, what, evs)
		}
		select {
		case <-c.notify:
		case <-deadline:
			c.t.Fatalf("timed out waiting for %s; events: %v", what, evs)
		}
	}
}

// ofCall returns the events of one call, in order.
func ofCall(evs []*pb.ServerEvent, id string) []*pb.ServerEvent {
	var out []*pb.ServerEvent
	for _, e := range evs {
		if e.GetWelcome() != nil || e.GetKeepalive() != nil || e.GetRejected() != nil {
			continue // stream-level events
		}
		if e.GetCallId() == id {
			out = append(out, e)
		}
	}
	return out
}

// ends counts the ToolCallEnd events of a call.
func ends(evs []*pb.ServerEvent, id string) int {
	n := 0
	for _, e := range ofCall(evs, id) {
		if e.GetEnd() != nil {
			n++
		}
	}
	return n
}

// end waits for the call's ToolCallEnd and returns it with the call's events.
func (c *convo) end(id string) (*pb.ToolResult, []*pb.ServerEvent) {
	c.t.Helper()
	evs := c.waitFor("end of "+id, func(evs []*pb.ServerEvent) bool { return ends(evs, id) > 0 })
	mine := ofCall(evs, id)
	for _, e := range mine {
		if e.GetEnd() != nil {
			return e.GetEnd().GetResult(), mine
		}
	}
	panic("unreachable")
}

// closeSend ends the client side and waits for the stream's end.
func (c *convo) closeSend() error {
	c.t.Helper()
	if err := c.stream.CloseSend(); err != nil {
		c.t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.t.Fatal("stream did not end after CloseSend")
	}
	if errors.Is(c.err, io.EOF) {
		return nil
	}
	return c.err
}
