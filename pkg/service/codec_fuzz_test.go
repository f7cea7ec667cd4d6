package service

import (
	"errors"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/errdefs"
)

// FuzzDecodeClientMessage feeds any bytes to the stream's decoder, under a
// small message limit so that both paths run: it never fails the stream
// (Unmarshal into an inbound returns nil), yields either a message or a
// refusal with a typed error, and what it reads of a refused ToolCall
// (call_id, name) is valid UTF-8, since it goes back to the client in a
// ToolCallEnd.
func FuzzDecodeClientMessage(f *testing.F) {
	seeds := []*pb.ClientMessage{
		{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "c1", Name: "read_file", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"path":"a"}`}}}},
		{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "conv"}}},
		{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: "c1"}}},
		{Msg: &pb.ClientMessage_Input{Input: &pb.Input{CallId: "c1", Payload: &pb.Input_Data{Data: []byte{0xff, 0}}}}},
	}
	for _, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\x12\x04\x0a\x02\xff\xfe"))     // a ToolCall whose call_id is not UTF-8
	f.Add([]byte("\x12\x80\x80\x80\x80\x10\x0a")) // a length far past the end
	c := clientCodec{base: encoding.GetCodecV2("proto"), limit: 256}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &inbound{}
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, in); err != nil {
			t.Fatalf("Unmarshal failed the stream: %v", err)
		}
		if (in.msg == nil) == (in.bad == nil) {
			t.Fatalf("want a message or a refusal, got %v and %v", in.msg, in.bad)
		}
		if in.bad == nil {
			return
		}
		var e *errdefs.Error
		if !errors.As(in.bad.err, &e) || e.Msg == "" || !utf8.ValidString(e.Msg) {
			t.Fatalf("refusal without a typed error: %v", in.bad.err)
		}
		if !utf8.ValidString(in.bad.callID) || !utf8.ValidString(in.bad.name) {
			t.Fatalf("refusal names invalid UTF-8: %q %q", in.bad.callID, in.bad.name)
		}
	})
}
