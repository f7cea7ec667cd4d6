// Command ladderd is the server of toolbench's ladder row: a ToolService
// that answers every ToolCall with fixed replies (toold's own events of a
// think call, captured by toolbench), built with as many of toold's gRPC
// layers as its flags ask for, so that one toolbench run can say what each
// layer costs a call's round trip:
//
//	ladderd -socket S -reply F                  bare ping-pong (the same server as serve-bare)
//	ladderd ... -codec                          + toold's codec and message limit (service.CodecServerOptions)
//	ladderd ... -codec -chain                   + the otelgrpc stats handler and the interceptor chain (daemon.ServerChain)
//	ladderd ... -codec -chain -sender           + one sender goroutine per stream fed by the receiver
//	ladderd ... -cpuprofile F                   and its CPU profile, written when it stops (toolbench -profiles)
//	ladderd ... -trace F                        and its execution trace, written until it stops (toolbench -profiles -trace)
//
// The layers are toold's own code (pkg/service, pkg/daemon, pkg/telemetry),
// not copies; the sender hand-off is the shape of toold's stream (the
// receiver appends to a buffer and wakes the one goroutine that calls
// Send), without toold's event log. It is its own binary, not a mode of
// toolbench, so that toolbench's bare server (rows 1 and 9) stays as small
// as a bare gRPC server is.
//
// It prints "ready" on stdout once it listens, and serves until SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/service"
	"github.com/toold/toold/pkg/telemetry"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ladderd:", err)
		os.Exit(1)
	}
}

func run() error {
	sock := flag.String("socket", "", "unix socket to serve on")
	replyPath := flag.String("reply", "", "file with the ServerEvents to answer each call with (length-prefixed, as toolbench writes them)")
	codec := flag.Bool("codec", false, "build the server with toold's codec and message limit")
	chain := flag.Bool("chain", false, "add toold's otelgrpc stats handler and interceptor chain")
	sender := flag.Bool("sender", false, "send from one goroutine per stream, fed by the receiver")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (on SIGTERM)")
	traceOut := flag.String("trace", "", "write an execution trace of the whole run to this file (until SIGTERM)")
	flag.Parse()
	replies, err := readReplies(*replyPath)
	if err != nil {
		return err
	}
	var opts []grpc.ServerOption
	if *codec {
		opts = append(opts, service.CodecServerOptions(0)...)
	}
	if *chain {
		// As toold builds them: spans from telemetry.Setup (with
		// toolbench's OTEL_TRACES_EXPORTER=none, non-recording, as toold's
		// default), a logger at toolbench's --log-level warn.
		tp, shutdown, _, err := telemetry.Setup(context.Background(), "ladderd")
		if err != nil {
			return err
		}
		defer shutdown(context.Background())
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		opts = append(opts, daemon.ServerChain(logger, tp, "", nil, nil)...)
	}
	l, err := net.Listen("unix", *sock)
	if err != nil {
		return err
	}
	gs := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(gs, health.NewServer()) // SERVING
	pb.RegisterToolServiceServer(gs, &pingPong{replies: replies, sender: *sender})
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
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
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
		<-sigs
		gs.Stop()
	}()
	fmt.Println("ready")
	err = gs.Serve(l)
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	return err
}

func readReplies(path string) ([]*pb.ServerEvent, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var replies []*pb.ServerEvent
	for len(raw) > 0 {
		m, n := protowire.ConsumeBytes(raw)
		if n < 0 {
			return nil, errors.New("bad reply file")
		}
		r := &pb.ServerEvent{}
		if err := proto.Unmarshal(m, r); err != nil {
			return nil, err
		}
		replies = append(replies, r)
		raw = raw[n:]
	}
	if len(replies) == 0 {
		return nil, errors.New("no replies")
	}
	return replies, nil
}

// pingPong answers every ToolCall with copies of replies.
type pingPong struct {
	pb.UnimplementedToolServiceServer
	replies []*pb.ServerEvent
	sender  bool
}

func (p *pingPong) answer(m *pb.ClientMessage, out []*pb.ServerEvent) []*pb.ServerEvent {
	for _, reply := range p.replies {
		r := proto.Clone(reply).(*pb.ServerEvent)
		r.CallId = m.GetCall().GetCallId()
		out = append(out, r)
	}
	return out
}

func (p *pingPong) ExecuteTool(s pb.ToolService_ExecuteToolServer) error {
	if p.sender {
		return p.withSender(s)
	}
	var out []*pb.ServerEvent
	for {
		m, err := s.Recv()
		if err != nil {
			return nil
		}
		if m.GetCall() == nil {
			continue
		}
		out = p.answer(m, out[:0])
		for _, r := range out {
			if err := s.Send(r); err != nil {
				return err
			}
		}
	}
}

// withSender receives on the handler's goroutine and sends on another,
// the only caller of Send: the receiver appends a call's replies to a
// buffer and wakes the sender (a channel of one), which sends everything
// ready, in order — the shape of toold's stream (pkg/service sendLoop).
func (p *pingPong) withSender(s pb.ToolService_ExecuteToolServer) error {
	var (
		mu      sync.Mutex
		pending []*pb.ServerEvent
		done    bool
		wake    = make(chan struct{}, 1)
		sendErr = make(chan error, 1)
	)
	go func() {
		var batch []*pb.ServerEvent
		for range wake {
			mu.Lock()
			batch, pending = pending, batch[:0]
			end := done
			mu.Unlock()
			for _, r := range batch {
				if err := s.Send(r); err != nil {
					sendErr <- err
					return
				}
			}
			clear(batch)
			if end {
				sendErr <- nil
				return
			}
		}
	}()
	notify := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	for {
		m, err := s.Recv()
		if err != nil {
			mu.Lock()
			done = true
			mu.Unlock()
			notify()
			return <-sendErr
		}
		if m.GetCall() == nil {
			continue
		}
		mu.Lock()
		pending = p.answer(m, pending)
		mu.Unlock()
		notify()
	}
}
