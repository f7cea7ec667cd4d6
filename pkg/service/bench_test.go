package service_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

// pingPong is the limit toold's stream is measured against: the same
// service and messages over the same transport, answering each ToolCall
// with one ServerEvent of the size of toold's ToolCallEnd, and nothing else.
type pingPong struct {
	pb.UnimplementedToolServiceServer
	reply *pb.ServerEvent
}

func (p *pingPong) ExecuteTool(s pb.ToolService_ExecuteToolServer) error {
	for {
		m, err := s.Recv()
		if err != nil {
			return nil
		}
		r := proto.Clone(p.reply).(*pb.ServerEvent)
		r.CallId = m.GetCall().GetCallId()
		if err := s.Send(r); err != nil {
			return err
		}
	}
}

func thinkCall(id string) *pb.ClientMessage {
	return &pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
		CallId: id, Name: "think", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"thought":"benchmark"}`},
	}}}
}

// roundTrips sends one call at a time and reads until its ToolCallEnd.
func roundTrips(b *testing.B, s pb.ToolService_ExecuteToolClient) {
	msg := thinkCall("b")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Send(msg); err != nil {
			b.Fatal(err)
		}
		for {
			ev, err := s.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if ev.GetEnd() != nil {
				break
			}
		}
	}
}

func openStream(b *testing.B, client pb.ToolServiceClient, hello *pb.Hello) pb.ToolService_ExecuteToolClient {
	s, err := client.ExecuteTool(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Recv(); err != nil { // Welcome
		b.Fatal(err)
	}
	b.Cleanup(func() { s.CloseSend() })
	return s
}

// BenchmarkThink is a no-op call's round trip over the unix socket: the
// ToolCall out, Start, Executing and End back.
func BenchmarkThink(b *testing.B) {
	h := startTraced(b, false, executor.Config{}, &tools.Think{})
	roundTrips(b, openStream(b, h.client, &pb.Hello{}))
}

// BenchmarkThinkOmitExecuting is the same with Hello.omit_executing: Start
// and End back.
func BenchmarkThinkOmitExecuting(b *testing.B) {
	h := startTraced(b, false, executor.Config{}, &tools.Think{})
	roundTrips(b, openStream(b, h.client, &pb.Hello{OmitExecuting: true}))
}

// BenchmarkBarePingPong is the baseline: one reply of the same size as
// toold's ToolCallEnd per call, from a bare handler.
func BenchmarkBarePingPong(b *testing.B) {
	// Take a real End event from toold as the reply, so sizes match.
	h := start(b, executor.Config{}, &tools.Think{})
	s := openStream(b, h.client, &pb.Hello{OmitExecuting: true})
	if err := s.Send(thinkCall("b")); err != nil {
		b.Fatal(err)
	}
	var reply *pb.ServerEvent
	for reply == nil {
		ev, err := s.Recv()
		if err != nil {
			b.Fatal(err)
		}
		if ev.GetEnd() != nil {
			reply = ev
		}
	}
	gs := grpc.NewServer()
	pb.RegisterToolServiceServer(gs, &pingPong{reply: reply})
	dir, _ := os.MkdirTemp("", "toold-bench")
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "p.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	go gs.Serve(l)
	defer gs.Stop()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ps, err := pb.NewToolServiceClient(conn).ExecuteTool(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer ps.CloseSend()
	b.ReportMetric(float64(proto.Size(reply)), "reply-bytes")
	roundTrips(b, ps)
}
