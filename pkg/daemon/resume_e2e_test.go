package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// offsetsCommand prints total bytes as 13-byte lines, each holding its own
// byte offset, so that the receiver can check every byte's place.
func offsetsCommand(total int) string {
	return fmt.Sprintf(`awk 'BEGIN { for (o = 0; o < %d; o += 13) printf "%%012d\n", o }'`, total)
}

// checkOffsets checks that out is what offsetsCommand printed, from 0.
func checkOffsets(t *testing.T, out []byte) {
	t.Helper()
	for o := 0; o < len(out); o += 13 {
		line := out[o:min(o+13, len(out))]
		if len(line) != 13 || line[12] != '\n' {
			t.Fatalf("line at offset %d is %q", o, line)
		}
		if n, err := strconv.Atoi(string(line[:12])); err != nil || n != o {
			t.Fatalf("line at offset %d says %q", o, line)
		}
	}
}

// The connection breaks while run_command prints 50 MB: the command runs
// on, and a stream resuming after the last seq it received gets every byte
// after it exactly once, in order, then the End.
func TestResumeRunCommandEndToEnd(t *testing.T) {
	const total = 50 << 20 / 13 * 13
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	conn, err := grpc.NewClient("unix://"+d.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s1, err := pb.NewToolServiceClient(conn).ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	args := fmt.Sprintf(`{"command":%q}`, offsetsCommand(total))
	for _, m := range []*pb.ClientMessage{
		{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "resume-e2e"}}},
		{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "big", Name: "run_command", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: args}}}},
	} {
		if err := s1.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	var last uint64
	var welcome *pb.Welcome
	var pid int32
	take := func(ev *pb.ServerEvent) *pb.ToolCallEnd {
		t.Helper()
		last = max(last, ev.GetSeq())
		if w := ev.GetWelcome(); w != nil && welcome == nil {
			welcome = w
		}
		if e := ev.GetExecuting(); e != nil {
			pid = e.GetPid()
		}
		if o := ev.GetProgress().GetOutput(); o != nil {
			if o.GetOffset() != uint64(out.Len()) {
				t.Fatalf("chunk at offset %d after %d bytes: a gap or a byte twice", o.GetOffset(), out.Len())
			}
			out.Write(o.GetData())
		}
		return ev.GetEnd()
	}
	for out.Len() < 5<<20 {
		ev, err := s1.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if take(ev) != nil {
			t.Fatalf("the command ended before the drop, after %d bytes", out.Len())
		}
	}
	// Break the connection and drain what the client still had.
	conn.Close()
	for {
		ev, err := s1.Recv()
		if err != nil {
			break
		}
		if take(ev) != nil {
			t.Fatalf("the command ended before the drop, after %d bytes", out.Len())
		}
	}
	if pid <= 0 {
		t.Fatalf("Executing.pid = %d, want the command's pid", pid)
	}
	dropped := out.Len()

	after := last
	hello := &pb.Hello{ConversationId: welcome.GetConversationId(), ConversationSecret: welcome.GetConversationSecret(), ResumeAfterSeq: &after}
	var s2 pb.ToolService_ExecuteToolClient
	for deadline := time.Now().Add(20 * time.Second); ; {
		if s2, err = d.Client.ExecuteTool(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s2.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}}); err != nil {
			t.Fatal(err)
		}
		ev, err := s2.Recv()
		if err == nil {
			if w := ev.GetWelcome(); !w.GetResumed() || w.GetReplayFromSeq() != after+1 {
				t.Fatalf("welcome = %v, want a resume from seq %d", w, after+1)
			}
			break
		}
		if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
			t.Fatalf("resume: %v", err)
		}
	}
	var end *pb.ToolCallEnd
	for end == nil {
		ev, err := s2.Recv()
		if err != nil {
			t.Fatalf("recv after %d bytes: %v", out.Len(), err)
		}
		if ev.GetSeq() != 0 && ev.GetSeq() <= after {
			t.Fatalf("seq %d replayed, resumed after %d", ev.GetSeq(), after)
		}
		end = take(ev)
	}
	if !end.GetResult().GetSuccess() {
		t.Fatalf("end = %v", end)
	}
	if out.Len() != total {
		t.Fatalf("received %d bytes (%d before the drop), want %d", out.Len(), dropped, total)
	}
	checkOffsets(t, out.Bytes())
	t.Logf("%d of %d bytes before the drop; the rest after resuming", dropped, total)
	if err := s2.CloseSend(); err != nil {
		t.Fatal(err)
	}
}

// run_command with stdin "pipe" reads what the client sends in Input
// messages, after a person approved it (the input is not judged); its
// Executing carries the process's pid.
func TestRunCommandStdinPipe(t *testing.T) {
	// Without the sandbox, where what a stdin pipe feeds cannot be judged
	// and asks even in YOLO (inside the sandbox it runs, contained).
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo"; c.Terminal.Sandbox = "off" }))
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "tr", Name: "run_command",
		Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"command":"tr a-z A-Z","stdin":"pipe"}`}}}})
	var out bytes.Buffer
	asked := false
	for {
		ev, err := x.s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetRequiresApproval(); a != nil {
			asked = true
			x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Approval{Approval: approveOnce(a)}})
		}
		if e := ev.GetExecuting(); e != nil {
			if e.GetPid() <= 0 {
				t.Fatalf("Executing.pid = %d", e.GetPid())
			}
			for _, in := range []*pb.Input{
				{CallId: "tr", Payload: &pb.Input_Data{Data: []byte("hello, ")}},
				{CallId: "tr", Payload: &pb.Input_Data{Data: []byte("stdin\n")}, Eof: true},
			} {
				x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Input{Input: in}})
			}
		}
		if r := ev.GetRejected(); r != nil {
			t.Fatalf("rejected: %v", r)
		}
		if o := ev.GetProgress().GetOutput(); o != nil {
			out.Write(o.GetData())
		}
		if e := ev.GetEnd(); e != nil {
			if !e.GetResult().GetSuccess() {
				t.Fatalf("end = %v", e)
			}
			break
		}
	}
	if !asked {
		t.Fatal("run_command with stdin pipe ran without asking, in yolo mode")
	}
	if out.String() != "HELLO, STDIN\n" {
		t.Fatalf("output = %q", out.String())
	}
}
