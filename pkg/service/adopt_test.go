package service_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/toold/toold/pkg/client/clienttest"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

// patByte is byte off of the output of the call tagged tag: every 8-byte
// word says whose it is and where it belongs (the tag in its top 16 bits,
// its offset / 8 below), so a byte of another call, of another
// conversation, or of a buffer the pool handed out again is told apart
// from the right one wherever it lands.
func patByte(tag, off uint64) byte {
	w := tag<<48 | off/8
	return byte(w >> (8 * (off % 8)))
}

// adoptPieces are the sizes the adopt tool hands over in turn: whole and
// partial buffers of the output pool the log keeps, a piece under 64 KiB
// it copies (5000), and, every seventh piece, bytes of the tool's own
// through Output (300), which join an unread adopted chunk.
var adoptPieces = []int{256 << 10, 200 << 10, 64 << 10, 70001, 5000, 300, 256<<10 - 8}

// adoptTool streams its tag's pattern (patByte) as a command's stdout
// reaches the log: each piece read into a fresh tools.OutputBuffer and
// handed over with Sink.Adopt, as the terminal's pump does.
func adoptTool() tools.Tool {
	return simple("adopt", `{"type":"object","properties":{"tag":{"type":"integer"},"bytes":{"type":"integer"}},"required":["tag","bytes"]}`,
		func(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
			var a struct{ Tag, Bytes int }
			_ = c.Bind(&a)
			own := make([]byte, 512)
			for off, i := 0, 0; off < a.Bytes; i++ {
				n := min(adoptPieces[i%len(adoptPieces)], a.Bytes-off)
				var p []byte
				if adoptPieces[i%len(adoptPieces)] == 300 {
					p = own[:n]
				} else {
					p = tools.OutputBuffer()[:n]
				}
				for j := range p {
					p[j] = patByte(uint64(a.Tag), uint64(off+j))
				}
				var err error
				if len(own) > 0 && &p[0] == &own[0] {
					err = s.Output(tools.Stdout, p)
					clear(own) // the log copied it: reusing it at once is the contract
				} else {
					err = s.Adopt(tools.Stdout, p)
				}
				if err != nil {
					return nil, err
				}
				off += n
			}
			return &tools.Result{Text: "done"}, nil
		})
}

// runAdoptAttack runs convs conversations of callsEach calls at once, each
// call streaming bytes of its own pattern to a checking client
// (clienttest.CheckedStream) that drops and resumes its stream drops times;
// the last call of the first conversation is canceled mid-stream.
func runAdoptAttack(t *testing.T, cfg executor.Config, convs, callsEach, bytes, drops int) {
	h := start(t, cfg, adoptTool())
	clients := make([]*clienttest.CheckedStream, convs)
	for conv := range clients {
		c := &clienttest.CheckedStream{Socket: h.sock, Conversation: fmt.Sprintf("adopt-%d", conv), Drops: drops, ResumeBack: 3}
		for k := range callsEach {
			tag := uint64(conv<<8|k) + 1
			c.Calls = append(c.Calls, &clienttest.CheckedCall{ID: fmt.Sprintf("c%d", k), Name: "adopt",
				Args:   fmt.Sprintf(`{"tag":%d,"bytes":%d}`, tag, bytes),
				Byte:   func(off uint64) byte { return patByte(tag, off) },
				Cancel: conv == 0 && k == callsEach-1})
		}
		clients[conv] = c
	}
	streams, err := clienttest.RunAll(clients)
	if err != nil {
		t.Fatal(err)
	}
	for conv, c := range clients {
		if streams[conv] != drops+1 {
			t.Errorf("conversation %d: %d streams, want %d (every drop mid-output)", conv, streams[conv], drops+1)
		}
		for _, k := range c.Calls {
			if k.End.GetResult().GetSuccess() {
				if k.Next != uint64(bytes) {
					t.Errorf("conversation %d call %s succeeded with %d bytes received, want %d", conv, k.ID, k.Next, bytes)
				}
				continue
			}
			if conv != 0 || k.ID != fmt.Sprintf("c%d", callsEach-1) {
				t.Errorf("conversation %d call %s failed: %v", conv, k.ID, k.End)
			}
		}
	}
}

// An attack on the adopted output buffers (tools.OutputBuffer handed to
// the event log with Sink.Adopt, freed by the log to the pool once sent):
// several conversations stream calls at once, each call's bytes a pattern
// that names the call and the offset of every 8-byte word, to clients that
// read slowly (64 KiB windows); every byte every client receives must be
// its own call's, at its offset, without gaps.
//
//   - resume: each client drops its stream mid-output three times and
//     resumes it, twice from 3 events before the last it got (the tail is
//     replayed, chunks the log already sent go out again), and one call is
//     canceled mid-stream; every resume must replay from the seq asked
//     for (the batch the sender took after a resume, the replayed tail and
//     what came since, is kept until sent: events.TestLogKeepsTheBatchBeingSent);
//   - evict-at-once: a log that keeps no tail (every chunk leaves it as
//     soon as the reader sent it: when it reads again) and whose unread
//     bound is under a whole buffer (a piece of 256 KiB is larger than
//     MaxUnreadOutput and copied; smaller ones are kept): a buffer freed
//     before the reader sent its chunk is handed out again while the
//     sender marshals it, and the check sees another call's bytes
//     (checked: it fails when trim evicts the chunks the reader took last
//     and frees them at once, as it did before the tail kept them).
func TestAttackAdoptedOutputBuffers(t *testing.T) {
	t.Run("resume", func(t *testing.T) {
		runAdoptAttack(t, executor.Config{ResumeGrace: 30 * time.Second}, 3, 3, 2<<20, 3)
	})
	t.Run("evict-at-once", func(t *testing.T) {
		runAdoptAttack(t, executor.Config{Log: events.LogConfig{TailEvents: 1, TailBytes: 1, MaxUnreadOutput: 240 << 10}}, 3, 2, 3<<20, 0)
	})
}

// The adopted buffers go back to the pool or to the collector: 12
// conversations in turn, each streaming 4 MiB in adopted buffers to the end
// and closing, leave the heap (after collection) within 16 MiB of where it
// was after the first — a log, chunk or buffer kept past its stream's end
// would hold its tail (4 MiB) per conversation.
func TestAdoptedBuffersNotKept(t *testing.T) {
	h := start(t, executor.Config{}, adoptTool())
	heap := func() uint64 {
		runtime.GC()
		runtime.GC() // the pools' victim caches go at the second
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var base uint64
	for i := range 12 {
		tag := uint64(i) + 1
		c := &clienttest.CheckedStream{Socket: h.sock, Conversation: fmt.Sprintf("kept-%d", i), Calls: []*clienttest.CheckedCall{{
			ID: "c", Name: "adopt", Args: fmt.Sprintf(`{"tag":%d,"bytes":%d}`, tag, 4<<20),
			Byte: func(off uint64) byte { return patByte(tag, off) }}}}
		if _, err := c.Run(); err != nil {
			t.Fatal(err)
		}
		if k := c.Calls[0]; k.Next != 4<<20 {
			t.Fatalf("conversation %d: %d bytes, end %v", i, k.Next, k.End)
		}
		if i == 0 {
			base = heap()
		}
	}
	grown := int64(heap()) - int64(base)
	t.Logf("heap after the first conversation %d KiB, grown %d KiB after 11 more", base>>10, grown>>10)
	if grown > 16<<20 {
		t.Errorf("the heap grew by %d MiB over 11 conversations of 4 MiB each", grown>>20)
	}
}
