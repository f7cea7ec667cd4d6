package service_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/service"
	"github.com/toold/toold/pkg/tools"
)

// rawMessage is a client message sent as exactly these bytes, as a client
// in another language (or a hostile one) may send them: Go's proto
// marshaling refuses invalid UTF-8, the wire does not.
type rawMessage []byte

// rawCodec sends rawMessage as is and everything else as proto.
type rawCodec struct{ proto encoding.CodecV2 }

func (c rawCodec) Name() string { return "proto" }
func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(rawMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(r)}, nil
	}
	return c.proto.Marshal(v)
}
func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error { return c.proto.Unmarshal(data, v) }

// openRaw opens a stream whose client may send raw messages.
func (h *harness) openRaw(hello *pb.Hello) *convo {
	h.t.Helper()
	return h.openWith(hello, grpc.ForceCodecV2(rawCodec{encoding.GetCodecV2("proto")}))
}

func (c *convo) sendRaw(b []byte) {
	c.t.Helper()
	if err := c.stream.SendMsg(rawMessage(b)); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// Wire encodings of client messages, built field by field.
func str(num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
}

func msgField(num protowire.Number, fields ...[]byte) []byte {
	var inner []byte
	for _, f := range fields {
		inner = append(inner, f...)
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), inner)
}

// rawCall is a ClientMessage{call: ToolCall{call_id, name, arguments_json}}.
func rawCall(id, name, args string) []byte {
	return msgField(2, str(1, id), str(2, name), str(3, args))
}

const badUTF8 = "\xff\xfe\xc3("

// One bad message ends only itself: whatever a client sends, the other
// calls of the stream run on and end once, with their own result, and the
// stream takes new calls. Each case runs while a call is running on the
// same stream.
func TestBadMessageEndsOnlyItself(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	fifty := strings.Repeat("x", 50_000_000)
	tests := []struct {
		name string
		msg  func() []byte
		// callID: the bad message is a ToolCall answered by its own Start
		// and End with wantCode; empty: a MessageRejected with wantCode
		// and reference wantRef.
		callID   string
		wantCode pb.ErrorCode
		wantRef  string
		wantMsg  string
	}{
		{name: "50 MB call", msg: func() []byte { return rawCall("big", "echo", `{"text":"`+fifty+`"}`) }, callID: "big",
			wantCode: pb.ErrorCode_ERROR_CODE_RESOURCE_EXHAUSTED, wantMsg: "over toold's limit of 4 MiB"},
		{name: "50 MB call reusing the running call's id", msg: func() []byte { return rawCall("long", "echo", `{"text":"`+fifty+`"}`) },
			wantCode: pb.ErrorCode_ERROR_CODE_RESOURCE_EXHAUSTED, wantRef: "long", wantMsg: "over toold's limit"},
		{name: "50 MB input", msg: func() []byte { return msgField(5, str(1, "long"), str(3, fifty)) },
			wantCode: pb.ErrorCode_ERROR_CODE_RESOURCE_EXHAUSTED, wantMsg: "over toold's limit"},
		{name: "invalid UTF-8 arguments", msg: func() []byte { return rawCall("u", "echo", `{"text":"`+badUTF8+`"}`) }, callID: "u",
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "Strings must be valid UTF-8"},
		{name: "invalid UTF-8 tool name", msg: func() []byte { return rawCall("n", "echo"+badUTF8, `{}`) }, callID: "n",
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "could not be decoded"},
		{name: "invalid UTF-8 call id", msg: func() []byte { return rawCall("id"+badUTF8, "echo", `{"text":"a"}`) },
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "could not be decoded"},
		{name: "invalid UTF-8 with the running call's id", msg: func() []byte { return rawCall("long", "echo", badUTF8) },
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantRef: "long", wantMsg: "could not be decoded"},
		{name: "invalid UTF-8 approval reason", msg: func() []byte { return msgField(3, str(1, "a1"), str(4, badUTF8)) },
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "could not be decoded"},
		{name: "invalid UTF-8 cancel", msg: func() []byte { return msgField(4, str(1, "long"), str(2, badUTF8)) },
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "could not be decoded"},
		{name: "truncated protobuf", msg: func() []byte { return rawCall("t", "echo", `{}`)[:7] }, callID: "t",
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "could not be decoded"},
		{name: "garbage", msg: func() []byte { return []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01} },
			wantCode: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, wantMsg: "could not be decoded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := h.openRaw(nil)
			c.call("long", "sleep", `{"ms":60000}`)
			c.waitFor("long runs", func(evs []*pb.ServerEvent) bool {
				for _, e := range ofCall(evs, "long") {
					if e.GetProgress() != nil {
						return true
					}
				}
				return false
			})
			c.sendRaw(tt.msg())
			var code pb.ErrorCode
			var msg string
			if tt.callID != "" {
				res, mine := c.end(tt.callID)
				if len(mine) != 2 || mine[0].GetStart() == nil {
					t.Fatalf("events of the bad call: %v, want Start and End", mine)
				}
				code, msg = res.GetError().GetCode(), res.GetError().GetMessage()
			} else {
				evs := c.waitFor("rejection", func(evs []*pb.ServerEvent) bool { return rejection(evs) != nil })
				r := rejection(evs)
				code, msg = r.GetCode(), r.GetMessage()
				if r.GetReferenceId() != tt.wantRef {
					t.Errorf("reference_id %q, want %q", r.GetReferenceId(), tt.wantRef)
				}
			}
			if code != tt.wantCode || !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("got %v %q, want %v containing %q", code, msg, tt.wantCode, tt.wantMsg)
			}
			// The running call was not touched: it is still running (no
			// End of it has been sent), takes its cancel, and ends once.
			c.mu.Lock()
			n := ends(c.events, "long")
			c.mu.Unlock()
			if n != 0 {
				t.Fatal("the running call ended because of another message")
			}
			c.call("after", "echo", `{"text":"still here"}`)
			if res, _ := c.end("after"); !res.GetSuccess() {
				t.Fatalf("call after the bad message: %v", res)
			}
			c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: "long"}}})
			if res, _ := c.end("long"); res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_CANCELED {
				t.Fatalf("running call: %v", res)
			}
			if err := c.closeSend(); err != nil {
				t.Fatalf("stream ended with %v", err)
			}
			if n := ends(c.events, "long"); n != 1 {
				t.Fatalf("%d ends of the running call, want 1", n)
			}
		})
	}
}

// A Hello that does not decode is refused and does not count as the first
// message: the client may send a good one.
func TestBadHello(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	c := h.openRaw(nil)
	c.sendRaw(msgField(1, str(1, "conv"+badUTF8)))
	c.waitFor("rejection", func(evs []*pb.ServerEvent) bool { return rejection(evs) != nil })
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "good"}}})
	evs := c.waitFor("welcome", func(evs []*pb.ServerEvent) bool {
		for _, e := range evs {
			if e.GetWelcome() != nil {
				return true
			}
		}
		return false
	})
	for _, e := range evs {
		if w := e.GetWelcome(); w != nil && w.GetConversationId() != "good" {
			t.Fatalf("welcome %v, want conversation good", w)
		}
	}
	if err := c.closeSend(); err != nil {
		t.Fatal(err)
	}
}

// What cannot be done: a message over the transport limit (64 MiB) cannot
// be skipped by grpc-go (it refuses it from its header, its body unread),
// so it ends the stream with RESOURCE_EXHAUSTED; the calls of the stream
// are canceled and nothing is left running.
func TestMessageOverTransportLimit(t *testing.T) {
	observed := make(chan string, 1)
	h := start(t, executor.Config{}, testTools(observed)...)
	c := h.openRaw(nil)
	c.call("long", "sleep", `{"ms":60000}`)
	c.waitFor("long runs", func(evs []*pb.ServerEvent) bool { return len(ofCall(evs, "long")) > 0 })
	// Sending may fail once the server has ended the stream; the end is
	// what matters.
	_ = c.stream.SendMsg(rawMessage(rawCall("huge", "echo", strings.Repeat("x", service.TransportMessageBytes(0)+1))))
	<-c.done
	if status.Code(c.err) != codes.ResourceExhausted {
		t.Fatalf("stream ended with %v, want RESOURCE_EXHAUSTED", c.err)
	}
	if id := <-observed; id != "long" {
		t.Fatalf("canceled %q", id)
	}
}

// Other RPCs keep the message limit: a ListTools request over it fails on
// its own, and the server goes on.
func TestMessageLimitOtherRPCs(t *testing.T) {
	h := start(t, testConfig{MaxMessageBytes: 1 << 10}, testTools(nil)...)
	big := &pb.ListToolsRequest{}
	big.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 99, protowire.BytesType), make([]byte, 4<<10)))
	if _, err := h.client.ListTools(t.Context(), big); err == nil || !strings.Contains(err.Error(), "over toold's limit of 1 KiB") {
		t.Fatalf("ListTools over the limit: %v", err)
	}
	if _, err := h.client.ListTools(t.Context(), &pb.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
}

// A result carrying invalid UTF-8 reaches the client with U+FFFD in its
// place (grpc-go would otherwise fail to marshal it and end the stream).
func TestInvalidUTF8InResults(t *testing.T) {
	weird := simple("weird", `{"type":"object"}`, func(_ context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
		_ = s.Progress("half\xffway", 0.5)
		return &tools.Result{Text: "a\xffb", Structured: map[string]any{"k\xff": []any{"v\xfe"}, "n": map[string]any{"x": "y\xff"}}}, nil
	})
	h := start(t, executor.Config{}, weird)
	c := h.open(nil)
	c.call("w", "weird", `{}`)
	res, evs := c.end("w")
	if got := res.GetContent()[0].GetText(); got != "a\ufffdb" {
		t.Errorf("text %q", got)
	}
	if st := res.GetStructured().AsMap(); st["k\ufffd"] == nil || st["n"].(map[string]any)["x"] != "y\ufffd" {
		t.Errorf("structured %v", st)
	}
	progress := false
	for _, e := range evs {
		if e.GetProgress().GetMessage() == "half\ufffdway" {
			progress = true
		}
	}
	if !progress {
		t.Errorf("progress: %v", evs)
	}
	c.call("after", "weird", `{}`)
	c.end("after")
	if err := c.closeSend(); err != nil {
		t.Fatal(err)
	}
}
