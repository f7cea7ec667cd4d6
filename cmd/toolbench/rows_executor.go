package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
)

// mixedCalls are the 8 calls each stream of row 10 sends at once.
var mixedCalls = []struct{ name, args string }{
	{"think", thinkArgs},
	{"read_file", `{"path":"small.txt"}`},
	{"list_dir", `{"path":"."}`},
	{"glob", `{"pattern":"*.txt"}`},
	{"grep_search", `{"pattern":"line 7"}`},
	{"run_command", `{"command":"true"}`},
	{"think", thinkArgs},
	{"read_file", `{"path":"small.txt","offset":10,"limit":5}`},
}

// rowMixed is row 12: 32 streams, each with 8 different calls in flight at
// once, against a bare gRPC server answering 8 pipelined messages per
// stream with one reply each (the transport's own cost of the same
// traffic).
func (b *bench) rowMixed(ctx context.Context, ws string) []*Row {
	row := &Row{ID: "mixed-32x8", Title: "12. 32 streams × 8 mixed calls in flight (think, read_file, list_dir, glob, grep_search, run_command true)",
		Kind: Latency, Target: "— (reported)"}
	fail := func(err error) []*Row { row.Error = err.Error(); return []*Row{row} }
	dir := filepath.Join(ws, "mixed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	var text []byte
	for i := range 100 {
		text = append(text, fmt.Sprintf("line %d of a small file\n", i)...)
	}
	if err := os.WriteFile(filepath.Join(dir, "small.txt"), text, 0o644); err != nil {
		return fail(err)
	}
	d, err := b.startToold(ctx, dir, "--approval-mode", "yolo")
	if err != nil {
		return fail(err)
	}
	defer d.stop()
	end, err := captureEnd(ctx, d.client)
	if err != nil {
		return fail(err)
	}
	bare, err := b.startBare(end)
	if err != nil {
		return fail(err)
	}
	defer bare.stop()
	const streams = 32
	open := func(c pb.ToolServiceClient, hello *pb.Hello) ([]*conv, error) {
		cs := make([]*conv, streams)
		for i := range cs {
			cv, err := openConv(ctx, c, hello)
			if err != nil {
				return nil, err
			}
			cs[i] = cv
		}
		return cs, nil
	}
	tc, err := open(d.client, &pb.Hello{})
	if err != nil {
		return fail(err)
	}
	bc, err := open(bare.client, nil)
	if err != nil {
		return fail(err)
	}
	defer func() {
		for _, c := range append(tc, bc...) {
			c.close()
		}
	}()
	failed := 0
	var mu sync.Mutex
	round := func(cs []*conv, check bool) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			t0 := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, len(cs))
			for _, cv := range cs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := cv.batch()
					if err == nil && check {
						for _, r := range res {
							if !r.GetSuccess() {
								mu.Lock()
								failed++
								mu.Unlock()
								err = fmt.Errorf("a call failed: %v", r.GetError())
							}
						}
					}
					if err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			return time.Since(t0), <-errs
		}
	}
	da, db, err := rounds(b.iters(60), 6, round(tc, true), round(bc, false))
	if err != nil {
		return fail(err)
	}
	row.Toold = latencies("toold, time for all 256 calls", da)
	row.Base = []Measure{latencies("bare gRPC, 256 pipelined ping-pongs", db)}
	calls := float64(streams*len(mixedCalls)) / (row.Toold.P50 / 1000)
	row.Verified = fmt.Sprintf("every call ended success (%d failed); %.0f calls/s at the median", failed, calls)
	return []*Row{row}
}

// batch sends the 8 mixed calls at once and reads until all ended.
func (c *conv) batch() ([]*pb.ToolResult, error) {
	ids := map[string]int{}
	for i, m := range mixedCalls {
		c.seq++
		id := strconv.Itoa(c.seq)
		ids[id] = i
		if err := c.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
			CallId: id, Name: m.name, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: m.args},
		}}}); err != nil {
			return nil, err
		}
	}
	res := make([]*pb.ToolResult, len(mixedCalls))
	for n := 0; n < len(mixedCalls); {
		ev, err := c.s.Recv()
		if err != nil {
			return nil, err
		}
		if e := ev.GetEnd(); e != nil {
			if i, ok := ids[ev.GetCallId()]; ok {
				res[i] = e.GetResult()
				n++
			}
		}
	}
	return res, nil
}

// rowReplay is row 13: how fast a resuming stream receives the events it
// missed (read again from the log's tail) against the same events live.
// A command prints the tail's worth of output; the client reads it live,
// drops the stream, and resumes from the start.
func (b *bench) rowReplay(ctx context.Context, ws string) []*Row {
	row := &Row{ID: "replay", Title: "13. replay after resume vs live (3 MiB of command output, within the log's default 4 MiB tail)",
		Kind: Rate, Unit: "MB/s", Target: "— (reported)"}
	fail := func(err error) []*Row { row.Error = err.Error(); return []*Row{row} }
	d, err := b.startToold(ctx, ws, "--approval-mode", "yolo")
	if err != nil {
		return fail(err)
	}
	defer d.stop()
	const size = 3 << 20
	var live, replay []float64
	for i := 0; i < max(1, b.iters(5)); i++ {
		l, r, err := replayOnce(ctx, d.client, size, fmt.Sprintf("replay-%d", i))
		if err != nil {
			return fail(err)
		}
		live, replay = append(live, l), append(replay, r)
	}
	row.Toold = Measure{Name: "replayed", Rate: median(replay), N: len(replay)}
	row.Base = []Measure{{Name: "live", Rate: median(live), N: len(live)}}
	row.Verified = fmt.Sprintf("%d bytes of output both ways, contiguous offsets (median of %d)", size, len(live))
	return []*Row{row}
}

func replayOnce(ctx context.Context, c pb.ToolServiceClient, size int, convID string) (live, replay float64, err error) {
	sctx, cancel := context.WithCancel(ctx)
	s, err := c.ExecuteTool(sctx)
	if err != nil {
		cancel()
		return 0, 0, err
	}
	cmd := fmt.Sprintf(`{"command":"head -c %d /dev/zero"}`, size)
	for _, m := range []*pb.ClientMessage{
		{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: convID}}},
		{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "r", Name: "run_command", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: cmd}}}},
	} {
		if err := s.Send(m); err != nil {
			cancel()
			return 0, 0, err
		}
	}
	var w *pb.Welcome
	var first time.Time
	n := 0
	for {
		ev, err := s.Recv()
		if err != nil {
			cancel()
			return 0, 0, err
		}
		if ev.GetWelcome() != nil {
			w = ev.GetWelcome()
		}
		if o := ev.GetProgress().GetOutput(); o != nil {
			if n == 0 {
				first = time.Now()
			}
			n += len(o.GetData())
		}
		if ev.GetEnd() != nil {
			break
		}
	}
	live = float64(n) / 1e6 / time.Since(first).Seconds()
	cancel() // the stream drops without CloseSend: its log waits to be resumed
	var zero uint64
	hello := &pb.Hello{ConversationId: w.GetConversationId(), ConversationSecret: w.GetConversationSecret(), ResumeAfterSeq: &zero}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := c.ExecuteTool(ctx)
		if err != nil {
			return 0, 0, err
		}
		t0 := time.Now()
		if err := r.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}}); err != nil {
			return 0, 0, err
		}
		got, done := 0, false
		for !done {
			ev, err := r.Recv()
			if err != nil {
				if time.Now().Before(deadline) && got == 0 {
					break // not yet seen dropped: retry
				}
				return 0, 0, err
			}
			if o := ev.GetProgress().GetOutput(); o != nil {
				got += len(o.GetData())
			}
			done = ev.GetEnd() != nil
		}
		if !done {
			continue
		}
		replay = float64(got) / 1e6 / time.Since(t0).Seconds()
		_ = r.CloseSend()
		if got != n {
			return 0, 0, errors.New("the replay did not hold every byte: " + strconv.Itoa(got) + " of " + strconv.Itoa(n))
		}
		return live, replay, nil
	}
}
