package daemon_test

// An attack on the Instant path (think computed on the receiver, its
// inline state left to the stream's next call: c4fb5ee, 56aa137, bf601d0):
// on many streams at once, think calls interleaved with slow commands,
// failing commands, invalid arguments and unknown tools, some thinks
// canceled the moment they are sent, each stream dropped mid-way and
// reattached after the last event it saw. No call's result, error, event
// or id may show in another's; each call's events are Start, then
// Executing and Progress, one End last; nothing is lost across the
// reattach; the package's TestMain checks no goroutine is left.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

var markerRE = regexp.MustCompile(`S\d+C\d+X`)

func TestAttackInstantInterleaved(t *testing.T) {
	d := daemontest.Start(t)
	const streams, calls = 6, 24
	var wg sync.WaitGroup
	errs := make([]error, streams)
	opened, canceled := make([]int, streams), make([]int, streams)
	for s := range streams {
		wg.Go(func() { opened[s], canceled[s], errs[s] = instantStream(d, s, calls) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("streams opened per conversation %v; thinks canceled before their end %v", opened, canceled)
}

// instantCall is what one call of the attack sent and must get back.
type instantCall struct {
	id, name, args, marker string
	kind                   int // i % 6, below
	events                 []string
	end                    *pb.ToolCallEnd
}

func instantStream(d *daemontest.Daemon, s, n int) (opened, canceled int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	byID := map[string]*instantCall{}
	var order []*instantCall
	for i := range n {
		c := &instantCall{id: fmt.Sprintf("s%d-c%02d", s, i), marker: fmt.Sprintf("S%dC%dX", s, i), kind: i % 6}
		switch c.kind {
		case 0, 1: // think; 1 is canceled as soon as sent
			c.name, c.args = "think", fmt.Sprintf(`{"thought":"%s %s"}`, c.marker, strings.Repeat("t", i*97))
		case 2: // a slow command
			c.name, c.args = "run_command", fmt.Sprintf(`{"command":"sleep 0.05; echo %s"}`, c.marker)
		case 3: // a failing command
			c.name, c.args = "run_command", fmt.Sprintf(`{"command":"echo %s >&2; exit 3"}`, c.marker)
		case 4: // invalid arguments to think
			c.name, c.args = "think", fmt.Sprintf(`{"thought":"%s","extra":{"x":[1]},"thought2":1}`, c.marker)
		case 5: // an unknown tool
			c.name, c.args = "no_such_tool_"+c.marker, `{}`
		}
		byID[c.id] = c
		order = append(order, c)
	}
	conv := fmt.Sprintf("a6-instant-%d", s)
	var welcome *pb.Welcome
	var last uint64
	ended := 0
	for attempt := 0; ended < n; attempt++ {
		if attempt > 20 {
			return opened, canceled, fmt.Errorf("stream %d: %d of %d calls ended after %d reattaches", s, ended, n, attempt)
		}
		opened++
		sctx, drop := context.WithCancel(ctx)
		st, err := d.Client.ExecuteTool(sctx)
		if err != nil {
			drop()
			return opened, canceled, err
		}
		hello := &pb.Hello{ConversationId: conv}
		resumed := uint64(0)
		if welcome != nil {
			after := last
			resumed = after
			hello = &pb.Hello{ConversationId: conv, ConversationSecret: welcome.GetConversationSecret(), ResumeAfterSeq: &after}
		}
		if err := st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}}); err != nil {
			drop()
			return opened, canceled, err
		}
		ev, err := st.Recv()
		if err != nil {
			drop()
			if welcome != nil {
				continue // toold has not seen the dropped stream end yet
			}
			return opened, canceled, err
		}
		if ev.GetWelcome() == nil {
			drop()
			return opened, canceled, fmt.Errorf("stream %d: first event %v", s, ev)
		}
		if welcome == nil {
			welcome = ev.GetWelcome()
			for _, c := range order {
				if err := st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: c.id, Name: c.name, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: c.args}}}}); err != nil {
					drop()
					return opened, canceled, err
				}
				if c.kind == 1 {
					if err := st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: c.id}}}); err != nil {
						drop()
						return opened, canceled, err
					}
				}
			}
		}
		dropAt := ended + n/3 // drop the stream after a third more ends
		for ended < n {
			ev, err := st.Recv()
			if err != nil {
				if ctx.Err() != nil {
					var open []string
					for _, c := range order {
						if c.end == nil {
							open = append(open, fmt.Sprintf("%s(%s) %v", c.id, c.name, c.events))
						}
					}
					drop()
					return opened, canceled, fmt.Errorf("stream %d (opened %d, resumed after %d, last seq %d): calls never ended: %v", s, opened, resumed, last, open)
				}
				break
			}
			// A keepalive carries the seq of the last event (not a new
			// one); every other event's seq is new.
			if ev.GetSeq() <= last && ev.GetSeq() != 0 && ev.GetKeepalive() == nil {
				drop()
				return opened, canceled, fmt.Errorf("stream %d (opened %d, resumed after %d): event seq %d again after %d: %v", s, opened, resumed, ev.GetSeq(), last, ev)
			}
			last = max(last, ev.GetSeq())
			if ev.GetKeepalive() != nil || ev.GetRejected() != nil {
				// A cancel that came after its think ended is refused,
				// naming the call; nothing else may be.
				if r := ev.GetRejected(); r != nil {
					late := false
					for _, c := range order {
						late = late || c.kind == 1 && strings.Contains(r.GetMessage(), fmt.Sprintf("%q", c.id))
					}
					if !late {
						drop()
						return opened, canceled, fmt.Errorf("stream %d: rejected %v", s, r)
					}
				}
				continue
			}
			c := byID[ev.GetCallId()]
			if c == nil {
				drop()
				return opened, canceled, fmt.Errorf("stream %d: event for call %q, never sent on it: %v", s, ev.GetCallId(), ev)
			}
			if m := markerRE.FindAllString(ev.String(), -1); len(m) > 0 {
				for _, x := range m {
					if x != c.marker {
						drop()
						return opened, canceled, fmt.Errorf("call %s: its event holds %s, another call's: %v", c.id, x, ev)
					}
				}
			}
			kind := ""
			switch {
			case ev.GetStart() != nil:
				kind = "start"
			case ev.GetExecuting() != nil:
				kind = "executing"
			case ev.GetProgress() != nil:
				kind = "progress"
			case ev.GetEnd() != nil:
				kind = "end"
				c.end = ev.GetEnd()
				ended++
			default:
				kind = fmt.Sprintf("%T", ev.GetEvent())
			}
			c.events = append(c.events, kind)
			// Dropped only once every call started: a call sent on a
			// stream the client cancels may never have been read by
			// toold (gRPC discards what the server had not received).
			if ended >= dropAt && attempt < 2 && allStarted(order) {
				break
			}
		}
		drop()
	}
	for _, c := range order {
		seq := strings.Join(c.events, " ")
		// The protocol's order (tool.proto, ExecuteTool): Start first, then
		// Executing (once) and Progress in any order — a command's first
		// output can be logged before its Executing, which the terminal
		// sends once the start returned — and one End last.
		if !regexp.MustCompile(`^start( (executing|progress))* end$`).MatchString(seq) || strings.Count(seq, "executing") > 1 {
			return opened, canceled, fmt.Errorf("call %s (%s): events %q, want start, executing and progress, one end", c.id, c.name, seq)
		}
		res := c.end.GetResult()
		text := ""
		for _, x := range res.GetContent() {
			text += x.GetText()
		}
		switch c.kind {
		case 0:
			if want := fmt.Sprintf("%s %s", c.marker, strings.Repeat("t", mustIndex(c.id)*97)); !res.GetSuccess() || text != want {
				return opened, canceled, fmt.Errorf("think %s: success %v, text %.80q, want its own thought", c.id, res.GetSuccess(), text)
			}
		case 1:
			if res.GetSuccess() && !strings.HasPrefix(text, c.marker+" ") {
				return opened, canceled, fmt.Errorf("canceled think %s: text %.80q", c.id, text)
			}
			if !res.GetSuccess() {
				canceled++
			}
			if !res.GetSuccess() && res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_CANCELED {
				return opened, canceled, fmt.Errorf("canceled think %s: %v", c.id, res.GetError())
			}
		case 2:
			if !res.GetSuccess() || !strings.Contains(c.end.String(), c.marker) {
				return opened, canceled, fmt.Errorf("command %s: %v", c.id, c.end)
			}
		case 3, 4, 5:
			if res.GetSuccess() && c.kind != 3 {
				return opened, canceled, fmt.Errorf("call %s succeeded: %v", c.id, c.end)
			}
		}
	}
	return opened, canceled, nil
}

func allStarted(calls []*instantCall) bool {
	for _, c := range calls {
		if len(c.events) == 0 {
			return false
		}
	}
	return true
}

func mustIndex(id string) int {
	var s, i int
	fmt.Sscanf(id, "s%d-c%d", &s, &i)
	return i
}
