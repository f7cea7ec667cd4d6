package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/executor"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A call's events: Welcome once for the stream, then Start, Executing, End;
// Welcome is not logged (seq 0), the call's events are numbered 1, 2, 3 as
// logged.
func TestCallLifecycle(t *testing.T) {
	h := start(t, executor.Config{Version: "test", Workspace: "/ws"}, testTools(nil)...)
	c := h.open(&pb.Hello{ConversationId: "conv-1", ClientName: "test"})
	c.call("c1", "echo", `{"text":"hi"}`)
	res, mine := c.end("c1")
	if !res.GetSuccess() || res.GetContent()[0].GetText() != `{"text":"hi"}` {
		t.Fatalf("result = %v", res)
	}
	var kinds []string
	for _, e := range mine {
		kinds = append(kinds, fmt.Sprintf("%T", e.GetEvent()))
	}
	want := []string{"*tooldv1.ServerEvent_Start", "*tooldv1.ServerEvent_Executing", "*tooldv1.ServerEvent_End"}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Fatalf("event kinds = %v, want %v", kinds, want)
	}
	st := mine[0].GetStart()
	if st.GetTool() != "echo" || st.GetDisplay() != "Echoing: hi" || st.GetRisk() != pb.RiskLevel_RISK_LEVEL_LOW || st.GetTraceId() == "" {
		t.Fatalf("start = %v", st)
	}
	if err := c.closeSend(); err != nil {
		t.Fatalf("stream end: %v", err)
	}
	w := c.events[0].GetWelcome()
	if w == nil || w.GetConversationId() != "conv-1" || w.GetApprovalMode() != pb.ApprovalMode_APPROVAL_MODE_AUTO || w.GetServerVersion() != "test" {
		t.Fatalf("first event = %v, want Welcome", c.events[0])
	}
	for i, e := range c.events {
		if e.GetSeq() != uint64(i) {
			t.Fatalf("event %d has seq %d", i, e.GetSeq())
		}
		if e.GetTime() == nil {
			t.Fatalf("event %d has no time", i)
		}
	}
}

// Bad input never breaks the stream: each bad message gets its typed error,
// and a good call on the same stream works afterwards.
func TestBadInputs(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	tests := []struct {
		name      string
		send      func(c *convo)
		callID    string // the call whose End carries the error; "" for MessageRejected
		wantCode  pb.ErrorCode
		wantMsg   string
		wantField string
	}{
		{name: "unknown tool", send: func(c *convo) { c.call("x", "ecko", `{}`) }, callID: "x",
			wantCode: pb.ErrorCode_ERROR_CODE_TOOL_NOT_FOUND, wantMsg: `did you mean "echo"`},
		{name: "malformed JSON", send: func(c *convo) { c.call("x", "echo", `{"text": "unterminated`) }, callID: "x",
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "not valid JSON"},
		{name: "arguments not an object", send: func(c *convo) { c.call("x", "echo", `["hi"]`) }, callID: "x",
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "must be a JSON object"},
		{name: "wrong type", send: func(c *convo) { c.call("x", "echo", `{"text":5}`) }, callID: "x",
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: `argument "text" must be string`, wantField: "/text"},
		{name: "missing required", send: func(c *convo) { c.call("x", "echo", `{}`) }, callID: "x",
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: `missing required argument "text"`},
		{name: "unknown argument", send: func(c *convo) { c.call("x", "echo", `{"txt":"a"}`) }, callID: "x",
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: `did you mean "text"`},
		{name: "empty call id", send: func(c *convo) { c.call("", "echo", `{"text":"a"}`) }, callID: "",
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "call_id is required"},
		{name: "cancel of unknown call", send: func(c *convo) {
			c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: "ghost"}}})
		}, callID: "", wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: `no running call has call_id "ghost"`},
		{name: "approval for unknown id", send: func(c *convo) {
			c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Approval{Approval: &pb.ApprovalDecision{ApprovalId: "nope", Approve: true}}})
		}, callID: "", wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: `approval_id "nope"`},
		{name: "input to no call", send: func(c *convo) {
			c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Input{Input: &pb.Input{CallId: "ghost", Payload: &pb.Input_Text{Text: "y"}}}})
		}, callID: "", wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "not waiting for input"},
		{name: "late hello", send: func(c *convo) { c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{}}}) },
			callID: "", wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "Hello must be the first message"},
		{name: "empty message", send: func(c *convo) { c.send(&pb.ClientMessage{}) },
			callID: "", wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "empty client message"},
		{name: "panicking tool", send: func(c *convo) { c.call("x", "boom", `{}`) }, callID: "x",
			wantCode: pb.ErrorCode_ERROR_CODE_INTERNAL, wantMsg: "internal error"},
		{name: "unclassified error hides details", send: func(c *convo) { c.call("x", "oops", `{}`) }, callID: "x",
			wantCode: pb.ErrorCode_ERROR_CODE_INTERNAL, wantMsg: "details are in the toold log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := h.open(nil)
			c.call("warmup", "think", `{"thought":"x"}`) // a first message, so a later Hello is late
			c.end("warmup")
			tt.send(c)
			var code pb.ErrorCode
			var msg, field string
			if tt.callID != "" {
				res, mine := c.end(tt.callID)
				if mine[0].GetStart() == nil {
					t.Fatalf("first event of the call is %v, want Start", mine[0])
				}
				if res.GetSuccess() {
					t.Fatalf("result = %v, want failure", res)
				}
				code, msg, field = res.GetError().GetCode(), res.GetError().GetMessage(), res.GetError().GetField()
			} else {
				evs := c.waitFor("rejection", func(evs []*pb.ServerEvent) bool {
					for _, e := range evs {
						if e.GetRejected() != nil {
							return true
						}
					}
					return false
				})
				for _, e := range evs {
					if r := e.GetRejected(); r != nil {
						code, msg = r.GetCode(), r.GetMessage()
					}
				}
			}
			if code != tt.wantCode || !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("got %v %q, want %v containing %q", code, msg, tt.wantCode, tt.wantMsg)
			}
			if tt.wantField != "" && field != tt.wantField {
				t.Fatalf("field = %q, want %q", field, tt.wantField)
			}
			if strings.Contains(msg, "/etc/shadow") {
				t.Fatal("an internal error leaked its details to the client")
			}
			// The stream still works.
			c.call("after", "echo", `{"text":"still here"}`)
			if res, _ := c.end("after"); !res.GetSuccess() {
				t.Fatalf("call after the bad input failed: %v", res)
			}
			if err := c.closeSend(); err != nil {
				t.Fatalf("stream ended with %v", err)
			}
		})
	}
}

// A ToolCall reusing a running call's id is refused as a message
// (MessageRejected, DUPLICATE_CALL_ID, reference_id = the id): the running
// call gets no second Start and exactly one End, its own.
func TestDuplicateCallID(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	c := h.open(nil)
	c.call("d", "sleep", `{"ms":60000}`)
	c.waitFor("first start", func(evs []*pb.ServerEvent) bool { return len(ofCall(evs, "d")) > 0 })
	c.call("d", "echo", `{"text":"dup"}`)
	evs := c.waitFor("rejection", func(evs []*pb.ServerEvent) bool { return rejection(evs) != nil })
	r := rejection(evs)
	if r.GetCode() != pb.ErrorCode_ERROR_CODE_DUPLICATE_CALL_ID || r.GetReferenceId() != "d" {
		t.Fatalf("rejection = %v", r)
	}
	for _, e := range evs {
		if e.GetRejected() != nil && e.GetCallId() != "" {
			t.Fatalf("the rejection carries call_id %q: a client would take it for the running call's", e.GetCallId())
		}
	}
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: "d"}}})
	res, mine := c.end("d")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_CANCELED {
		t.Fatalf("the running call ended %v, want CANCELED (its own end)", res)
	}
	starts := 0
	for _, e := range mine {
		if e.GetStart() != nil {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("%d starts for call d, want 1", starts)
	}
	// Once the first call ended, its id may be reused.
	c.call("d", "echo", `{"text":"reuse"}`)
	evs = c.waitFor("second end", func(evs []*pb.ServerEvent) bool { return ends(evs, "d") == 2 })
	if err := c.closeSend(); err != nil {
		t.Fatal(err)
	}
	if n := ends(c.events, "d"); n != 2 {
		t.Fatalf("%d ends with call_id d after two calls, want 2", n)
	}
}

// rejection returns the first MessageRejected event, or nil.
func rejection(evs []*pb.ServerEvent) *pb.MessageRejected {
	for _, e := range evs {
		if r := e.GetRejected(); r != nil {
			return r
		}
	}
	return nil
}

func TestCancelAndTimeout(t *testing.T) {
	observed := make(chan string, 4)
	h := start(t, executor.Config{MaxTimeout: time.Second}, testTools(observed)...)
	c := h.open(nil)

	c.call("long", "sleep", `{"ms":60000}`)
	c.waitFor("progress", func(evs []*pb.ServerEvent) bool {
		for _, e := range ofCall(evs, "long") {
			if e.GetProgress() != nil {
				return true
			}
		}
		return false
	})
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: "long", Reason: "user pressed stop"}}})
	res, _ := c.end("long")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_CANCELED || res.GetContent()[0].GetText() != "partial" {
		t.Fatalf("canceled call: %v", res)
	}
	if id := <-observed; id != "long" {
		t.Fatalf("tool observed cancel of %q", id)
	}

	c.callTimeout("slow", "sleep", `{"ms":60000}`, 50*time.Millisecond)
	res, _ = c.end("slow")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_TIMEOUT || !strings.Contains(res.GetError().GetMessage(), "timeout of 50ms") {
		t.Fatalf("timed out call: %v", res)
	}
	<-observed

	// A timeout above the maximum is capped at it (1s here).
	start := time.Now()
	c.callTimeout("capped", "sleep", `{"ms":60000}`, time.Hour)
	res, _ = c.end("capped")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_TIMEOUT || time.Since(start) > 30*time.Second { // capped at 1s, not the sleep's 60s
		t.Fatalf("capped call: %v after %v", res, time.Since(start))
	}
	<-observed
}

// A client that disconnects mid-call cancels its calls; nothing leaks
// (goleak checks goroutines at the end of the package).
func TestDisconnectMidCall(t *testing.T) {
	observed := make(chan string, 1)
	h := start(t, executor.Config{}, testTools(observed)...)
	c := h.open(nil)
	c.call("mid", "sleep", `{"ms":60000}`)
	c.waitFor("start", func(evs []*pb.ServerEvent) bool { return len(ofCall(evs, "mid")) >= 2 })
	c.cancel()
	select {
	case id := <-observed:
		if id != "mid" {
			t.Fatalf("observed %q", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call was not canceled when its stream ended")
	}
	// The server is fine: a new stream works.
	c2 := h.open(nil)
	c2.call("ok", "think", `{"thought":"after disconnect"}`)
	if res, _ := c2.end("ok"); !res.GetSuccess() {
		t.Fatalf("%v", res)
	}
}

// CloseSend lets running calls finish before the stream ends.
func TestCloseSendDrains(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	c := h.open(nil)
	c.call("a", "sleep", `{"ms":100}`)
	c.call("b", "sleep", `{"ms":50}`)
	if err := c.closeSend(); err != nil {
		t.Fatal(err)
	}
	if ends(c.events, "a") != 1 || ends(c.events, "b") != 1 {
		t.Fatalf("events = %v", c.events)
	}
}

func TestConcurrencyLimits(t *testing.T) {
	h := start(t, executor.Config{MaxCallsPerStream: 2, MaxCalls: 3}, testTools(nil)...)
	c := h.open(nil)
	c.call("s1", "sleep", `{"ms":2000}`)
	c.call("s2", "sleep", `{"ms":2000}`)
	c.call("s3", "echo", `{"text":"over the stream limit"}`)
	res, _ := c.end("s3")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_RESOURCE_EXHAUSTED || !strings.Contains(res.GetError().GetMessage(), "this stream (limit 2)") {
		t.Fatalf("s3: %v", res)
	}
	c2 := h.open(nil)
	c2.call("t1", "sleep", `{"ms":2000}`)
	c2.call("t2", "echo", `{"text":"over the daemon limit"}`)
	res, _ = c2.end("t2")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_RESOURCE_EXHAUSTED || !strings.Contains(res.GetError().GetMessage(), "toold (limit 3)") {
		t.Fatalf("t2: %v", res)
	}
	for _, id := range []string{"s1", "s2"} {
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: id}}})
	}
	c.end("s1")
	c.end("s2")
	c.call("s4", "echo", `{"text":"room again"}`)
	if res, _ := c.end("s4"); !res.GetSuccess() {
		t.Fatalf("s4: %v", res)
	}
}

func TestManyConcurrentCalls(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	c := h.open(nil)
	const n = 50
	for i := range n {
		c.call(fmt.Sprint("c", i), "sleep", `{"ms":20}`)
	}
	c.waitFor("all ends", func(evs []*pb.ServerEvent) bool {
		for i := range n {
			if ends(evs, fmt.Sprint("c", i)) != 1 {
				return false
			}
		}
		return true
	})
}

// Output arrives as coalesced chunks with contiguous offsets, complete.
func TestOutputStreaming(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	c := h.open(nil)
	const size = 3 << 20
	c.call("o", "spew", fmt.Sprintf(`{"bytes":%d}`, size))
	res, mine := c.end("o")
	if !res.GetSuccess() {
		t.Fatal(res)
	}
	var got int
	var chunks int
	for _, e := range mine {
		out := e.GetProgress().GetOutput()
		if out == nil {
			continue
		}
		if out.GetOffset() != uint64(got) || out.GetStream() != pb.OutputChunk_STREAM_STDOUT {
			t.Fatalf("chunk at offset %d (stream %v), have %d bytes", out.GetOffset(), out.GetStream(), got)
		}
		for i, b := range out.GetData() {
			if b != byte('a'+(got+i)%26) {
				t.Fatalf("byte %d corrupted", got+i)
			}
		}
		got += len(out.GetData())
		chunks++
	}
	if got != size {
		t.Fatalf("got %d bytes, want %d", got, size)
	}
	if chunks >= size/4096 {
		t.Fatalf("%d chunks for %d writes: not coalesced", chunks, size/4096)
	}
}

func TestCoercionReported(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	c := h.open(nil)
	c.call("k", "echo", `{"text":"a","n":"7"}`)
	res, _ := c.end("k")
	if !res.GetSuccess() || res.GetContent()[0].GetText() != `{"n":7,"text":"a"}` {
		t.Fatalf("%v", res)
	}
	cs := res.GetCoercions()
	if len(cs) != 1 || cs[0].GetField() != "/n" || cs[0].GetFrom() != `"7"` || cs[0].GetTo() != "7" {
		t.Fatalf("coercions = %v", cs)
	}
	if res.GetMetadata().GetFields()["coerced_arguments"].GetNumberValue() != 1 {
		t.Fatalf("metadata = %v", res.GetMetadata())
	}
}

func TestStructArguments(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	c := h.open(nil)
	args, _ := structpb.NewStruct(map[string]any{"text": "via struct", "n": 3})
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "s", Name: "echo", Arguments: &pb.ToolCall_ArgumentsStruct{ArgumentsStruct: args}}}})
	res, _ := c.end("s")
	if !res.GetSuccess() || res.GetContent()[0].GetText() != `{"n":3,"text":"via struct"}` {
		t.Fatalf("%v", res)
	}
}

func TestHelloTightensMode(t *testing.T) {
	h := start(t, executor.Config{Mode: authz.ModeAuto}, testTools(nil)...)
	for _, tt := range []struct {
		ask, want pb.ApprovalMode
	}{
		{pb.ApprovalMode_APPROVAL_MODE_ASK, pb.ApprovalMode_APPROVAL_MODE_ASK},
		{pb.ApprovalMode_APPROVAL_MODE_YOLO, pb.ApprovalMode_APPROVAL_MODE_AUTO},
		{pb.ApprovalMode_APPROVAL_MODE_UNSPECIFIED, pb.ApprovalMode_APPROVAL_MODE_AUTO},
	} {
		c := h.open(&pb.Hello{ApprovalMode: tt.ask})
		evs := c.waitFor("welcome", func(evs []*pb.ServerEvent) bool { return len(evs) > 0 })
		if got := evs[0].GetWelcome().GetApprovalMode(); got != tt.want {
			t.Errorf("asked %v: mode %v, want %v", tt.ask, got, tt.want)
		}
		if evs[0].GetWelcome().GetConversationId() == "" {
			t.Error("no conversation id generated")
		}
	}
}

func TestOmitExecuting(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	c := h.open(&pb.Hello{OmitExecuting: true})
	c.call("q", "think", `{"thought":"quiet"}`)
	_, mine := c.end("q")
	if len(mine) != 2 || mine[0].GetStart() == nil || mine[1].GetEnd() == nil {
		t.Fatalf("events = %v, want Start and End only", mine)
	}
}

// Shutdown refuses new calls, lets running ones finish within the grace,
// cancels the rest, and every call still gets its End; the stream ends OK.
func TestShutdown(t *testing.T) {
	observed := make(chan string, 2)
	h := start(t, executor.Config{}, testTools(observed)...)
	c := h.open(nil)
	c.call("quick", "sleep", `{"ms":100}`)
	c.call("stuck", "sleep", `{"ms":60000}`)
	c.waitFor("both started", func(evs []*pb.ServerEvent) bool {
		return len(ofCall(evs, "quick")) >= 2 && len(ofCall(evs, "stuck")) >= 2
	})
	done := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		defer cancel()
		h.x.Shutdown(ctx)
		close(done)
	}()
	<-h.x.Draining()
	c.call("late", "echo", `{"text":"too late"}`)
	res, _ := c.end("late")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_UNAVAILABLE {
		t.Fatalf("late call: %v", res)
	}
	if res, _ := c.end("quick"); !res.GetSuccess() {
		t.Fatalf("quick call should finish within the grace: %v", res)
	}
	res, _ = c.end("stuck")
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_CANCELED || !strings.Contains(res.GetError().GetMessage(), "shutting down") {
		t.Fatalf("stuck call: %v", res)
	}
	<-done
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end after shutdown")
	}
	if st, _ := status.FromError(c.err); c.err != nil && st.Code() != codes.OK && c.err.Error() != "EOF" {
		t.Fatalf("stream ended with %v", c.err)
	}
}

func TestListToolsRendering(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	ctx := context.Background()
	resp, err := h.client.ListTools(ctx, &pb.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ts := range resp.GetTools() {
		names = append(names, ts.GetName())
	}
	if strings.Join(names, ",") != "think,echo,sleep,boom,spew,oops" {
		t.Fatalf("names = %v", names)
	}
	for _, f := range []pb.ToolFormat{pb.ToolFormat_TOOL_FORMAT_OPENAI, pb.ToolFormat_TOOL_FORMAT_ANTHROPIC, pb.ToolFormat_TOOL_FORMAT_GEMINI, pb.ToolFormat_TOOL_FORMAT_MCP} {
		a, err := h.client.ListTools(ctx, &pb.ListToolsRequest{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := h.client.ListTools(ctx, &pb.ListToolsRequest{Format: f})
		if a.GetRenderedJson() == "" || a.GetRenderedJson() != b.GetRenderedJson() {
			t.Fatalf("%v: rendering empty or unstable", f)
		}
		key := map[pb.ToolFormat]string{
			pb.ToolFormat_TOOL_FORMAT_OPENAI: `"parameters":`, pb.ToolFormat_TOOL_FORMAT_ANTHROPIC: `"input_schema":`,
			pb.ToolFormat_TOOL_FORMAT_GEMINI: `"parametersJsonSchema":`, pb.ToolFormat_TOOL_FORMAT_MCP: `"inputSchema":`,
		}[f]
		if !strings.Contains(a.GetRenderedJson(), key) {
			t.Fatalf("%v rendering lacks %s: %s", f, key, a.GetRenderedJson()[:200])
		}
	}
}

// A slow call's Start goes out while it runs (nothing holds it back for
// its End), and a call's events carry consecutive seqs.
func TestStartGoesOutAtOnce(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	c := h.open(nil)
	c.call("slow", "sleep", `{"ms":1000}`)
	evs := c.waitFor("start of the slow call", func(evs []*pb.ServerEvent) bool { return len(ofCall(evs, "slow")) > 0 })
	if mine := ofCall(evs, "slow"); mine[0].GetStart() == nil || ends(evs, "slow") != 0 {
		t.Fatalf("events = %v: want Start first, before the end", mine)
	}
	c.call("fast", "think", `{"thought":"x"}`)
	_, mine := c.end("fast")
	for i := 1; i < len(mine); i++ {
		if mine[i].GetSeq() != mine[i-1].GetSeq()+1 {
			t.Fatalf("fast call's events not consecutive: %v", mine)
		}
	}
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: "slow"}}})
	c.end("slow")
}
