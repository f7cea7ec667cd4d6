package service

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"

	pb "github.com/toold/toold/gen/toold/v1"
)

func outputEvent(data []byte, offset uint64) *pb.ServerEvent {
	return &pb.ServerEvent{CallId: "c1", Seq: 7, Event: &pb.ServerEvent_Progress{Progress: &pb.Progress{
		Output: &pb.OutputChunk{Stream: pb.OutputChunk_STREAM_STDOUT, Data: data, Offset: offset},
	}}}
}

// The codec marshals large messages into buffers of its own pool, which
// are handed out again as they were left (not cleared): a message written
// into a buffer that held a longer one decodes exactly, and so does the
// message whose invalid UTF-8 is repaired.
func TestCodecMarshalsIntoReusedBuffers(t *testing.T) {
	c := clientCodec{base: encoding.GetCodecV2("proto"), limit: DefaultMaxMessageBytes}
	for i, n := range []int{300 << 10, 200 << 10, 256 << 10, 3 << 10, 300 << 10, 5 << 20, 10, 1 << 10, 0} {
		data := bytes.Repeat([]byte{byte('a' + i)}, n)
		want := outputEvent(data, uint64(i))
		b, err := c.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got := &pb.ServerEvent{}
		err = proto.Unmarshal(b.Materialize(), got)
		b.Free()
		if err != nil || !proto.Equal(got, want) {
			t.Fatalf("message %d (%d bytes of output) came back different: %v", i, n, err)
		}
	}
	bad := outputEvent(bytes.Repeat([]byte{'z'}, 64<<10), 0)
	bad.CallId = "c\xff"
	b, err := c.Marshal(bad)
	if err != nil {
		t.Fatalf("invalid UTF-8 was refused, not repaired: %v", err)
	}
	defer b.Free()
	got := &pb.ServerEvent{}
	if err := proto.Unmarshal(b.Materialize(), got); err != nil || got.GetCallId() != "c\uFFFD" || len(got.GetProgress().GetOutput().GetData()) != 64<<10 {
		t.Fatalf("repaired message: %v, call id %q", err, got.GetCallId())
	}
}

// A small message (an event of a think) is marshaled into a pooled buffer
// that gRPC frees once written: one allocation (the BufferSlice), not
// three.
func TestCodecSmallMessageAllocations(t *testing.T) {
	c := clientCodec{base: encoding.GetCodecV2("proto"), limit: DefaultMaxMessageBytes}
	ev := &pb.ServerEvent{CallId: "c1", Seq: 9, Event: &pb.ServerEvent_Executing{Executing: &pb.Executing{}}}
	n := testing.AllocsPerRun(200, func() {
		b, err := c.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		b.Free()
	})
	if n > 1 {
		t.Fatalf("marshaling a small event: %v allocations, want at most 1", n)
	}
}

func TestDirtyPoolTiers(t *testing.T) {
	p := &dirtyPool{}
	for _, tc := range []struct{ size, capacity int }{
		{1, 1 << 10}, {1 << 10, 1 << 10}, {1<<10 + 1, 2 << 10}, {256<<10 + 40, 512 << 10}, {4 << 20, 4 << 20}, {4<<20 + 1, 4<<20 + 1},
	} {
		b := p.Get(tc.size)
		if len(*b) != tc.size || cap(*b) != tc.capacity {
			t.Errorf("Get(%d): len %d cap %d, want cap %d", tc.size, len(*b), cap(*b), tc.capacity)
		}
		p.Put(b)
	}
	// A buffer whose capacity is no tier is not kept: Get never returns
	// less capacity than its tier promises.
	odd := make([]byte, 3000)
	p.Put(&odd)
	for range 100 {
		if b := p.Get(2 << 10); cap(*b) < 2<<10 {
			t.Fatalf("Get(2 KiB) returned a buffer of capacity %d", cap(*b))
		}
	}
}
