// Package clienttest holds clients of toold for tests, which check what
// toold sends them.
package clienttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
)

// CheckedCall is a call whose stdout a test knows byte for byte (Byte),
// for CheckedStream.
type CheckedCall struct {
	ID, Name, Args string
	// Byte returns the byte the call writes at offset off.
	Byte func(off uint64) byte
	// Cancel: the client cancels the call once its first bytes came.
	Cancel bool

	// Next is set by Run: every byte below it was received and checked.
	Next uint64
	// End is the call's end, once received.
	End *pb.ToolCallEnd
}

// CheckedStream is a client of one conversation that checks every byte of
// output it receives: it opens a connection of its own to Socket with
// small flow-control windows (a slow reader: toold's sends wait for it),
// sends Calls, and checks every chunk of each against the call's Byte at
// the chunk's offset, and that no chunk starts beyond what was received
// (no gap). It drops its stream Drops times mid-output (a client cancel)
// and resumes it, every other time from ResumeBack events before the last
// one it received (the log's tail is replayed: chunks already sent come
// again and are checked again).
type CheckedStream struct {
	Socket       string
	Conversation string
	Calls        []*CheckedCall
	Drops        int
	ResumeBack   uint64
	// Timeout bounds the whole run (default 60 s).
	Timeout time.Duration
}

// RunAll runs every stream at once (each as Run) and returns, in their
// order, how many streams each opened and the first fault among them.
func RunAll(streams []*CheckedStream) (opened []int, err error) {
	opened = make([]int, len(streams))
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	for i, c := range streams {
		wg.Go(func() { opened[i], errs[i] = c.Run() })
	}
	wg.Wait()
	return opened, errors.Join(errs...)
}

// Run runs the calls to their ends and closes the stream; it returns how
// many streams it opened (Drops+1 unless the calls ended sooner) and the
// first fault: a byte that is not the call's, a gap, events the resumed
// stream could not replay, a broken stream.
func (c *CheckedStream) Run() (streams int, err error) {
	conn, err := grpc.NewClient("unix://"+c.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	client := pb.NewToolServiceClient(conn)
	byID := map[string]*CheckedCall{}
	for _, k := range c.Calls {
		byID[k.ID] = k
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, stop := context.WithTimeout(context.Background(), timeout)
	defer stop()
	var welcome *pb.Welcome
	var last uint64
	for {
		if ctx.Err() != nil {
			return streams, fmt.Errorf("conversation %s: not done after %d streams", c.Conversation, streams)
		}
		hello := &pb.Hello{ConversationId: c.Conversation}
		var after uint64
		if welcome != nil {
			after = last
			if streams%2 == 0 && last > c.ResumeBack {
				after = last - c.ResumeBack
			}
			hello = &pb.Hello{ConversationId: welcome.GetConversationId(), ConversationSecret: welcome.GetConversationSecret(), ResumeAfterSeq: &after}
		}
		done, err := c.stream(ctx, client, hello, after, streams, &welcome, &last, byID)
		if status.Code(err) == codes.Unavailable && welcome != nil {
			continue // toold has not seen the dropped stream end yet
		}
		if err != nil {
			return streams, fmt.Errorf("conversation %s stream %d: %w", c.Conversation, streams, err)
		}
		streams++
		if done {
			return streams, nil
		}
	}
}

// stream runs one stream; done says every call ended and the stream closed.
func (c *CheckedStream) stream(ctx context.Context, client pb.ToolServiceClient, hello *pb.Hello, after uint64, n int,
	welcome **pb.Welcome, last *uint64, byID map[string]*CheckedCall) (done bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := client.ExecuteTool(ctx)
	if err != nil {
		return false, err
	}
	if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}}); err != nil {
		return false, err
	}
	ev, err := s.Recv()
	if err != nil {
		return false, err
	}
	w := ev.GetWelcome()
	if w == nil {
		return false, fmt.Errorf("first event %v, want Welcome", ev)
	}
	if *welcome != nil && w.GetReplayFromSeq() != after+1 {
		return false, fmt.Errorf("resumed after %d, replay from %d: events lost from the tail", after, w.GetReplayFromSeq())
	}
	if *welcome == nil {
		*welcome = w
		for _, k := range c.Calls {
			if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: k.ID, Name: k.Name,
				Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: k.Args}}}}); err != nil {
				return false, err
			}
		}
	}
	got, dropAt := 0, (1+n%3)*(256<<10)
	for {
		ev, err := s.Recv()
		if err != nil {
			return false, fmt.Errorf("broke: %w", err)
		}
		*last = max(*last, ev.GetSeq())
		k := byID[ev.GetCallId()]
		if o := ev.GetProgress().GetOutput(); o != nil && k != nil && o.GetStream() == pb.OutputChunk_STREAM_STDOUT {
			if o.GetOffset() > k.Next {
				return false, fmt.Errorf("call %s: chunk at offset %d, received up to %d: a gap", k.ID, o.GetOffset(), k.Next)
			}
			data := o.GetData()
			for i, b := range data {
				off := o.GetOffset() + uint64(i)
				if want := k.Byte(off); b != want {
					lo, hi := max(0, i-16), min(len(data), i+16)
					return false, fmt.Errorf("call %s: byte at offset %d is %#02x, want %#02x; around it %q (another call's bytes or a reused buffer)",
						k.ID, off, b, want, data[lo:hi])
				}
			}
			k.Next = max(k.Next, o.GetOffset()+uint64(len(data)))
			got += len(data)
			if k.Cancel {
				k.Cancel = false
				if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: k.ID}}}); err != nil {
					return false, err
				}
			}
		}
		if e := ev.GetEnd(); e != nil && k != nil {
			k.End = e
		}
		ended := true
		for _, k := range c.Calls {
			ended = ended && k.End != nil
		}
		if ended {
			if err := s.CloseSend(); err != nil {
				return false, err
			}
			for {
				if _, err := s.Recv(); err != nil {
					if errors.Is(err, io.EOF) {
						return true, nil
					}
					return false, fmt.Errorf("ended with %w after CloseSend", err)
				}
			}
		}
		if n < c.Drops && got >= dropAt {
			cancel() // the client drops the stream mid-output
			for {
				if _, err := s.Recv(); err != nil {
					return false, nil
				}
			}
		}
	}
}
