package events_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

func TestQueueOrderAndSeq(t *testing.T) {
	q := events.NewQueue(events.QueueConfig{})
	ctx := context.Background()
	must(t, q.Push(ctx, events.Event{CallID: "a", Start: &events.Start{}}))
	must(t, q.Output(ctx, "a", tools.Stdout, []byte("hel")))
	must(t, q.Output(ctx, "a", tools.Stdout, []byte("lo")))   // merged into the pending chunk
	must(t, q.Output(ctx, "a", tools.Stderr, []byte("warn"))) // another stream: own chunk
	must(t, q.Push(ctx, events.Event{CallID: "a", Progress: &events.Progress{Message: "half", Fraction: 0.5}}))
	must(t, q.Output(ctx, "a", tools.Stdout, []byte(" world"))) // after an event: a new chunk
	must(t, q.Push(ctx, events.Event{CallID: "a", End: &events.End{}}))
	q.Close()

	type got struct {
		kind   string
		data   string
		offset uint64
	}
	want := []got{
		{"start", "", 0},
		{"out1", "hello", 0},
		{"out2", "warn", 0},
		{"progress", "half", 0},
		{"out1", " world", 5},
		{"end", "", 0},
	}
	for i, w := range want {
		ev, err := q.Next(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d: seq %d", i, ev.Seq)
		}
		var g got
		switch {
		case ev.Start != nil:
			g.kind = "start"
		case ev.End != nil:
			g.kind = "end"
		case ev.Progress != nil && ev.Progress.Output != nil:
			g = got{kind: "out" + string(rune('0'+int(ev.Progress.Output.Stream))), data: string(ev.Progress.Output.Data), offset: ev.Progress.Output.Offset}
		case ev.Progress != nil:
			g = got{kind: "progress", data: ev.Progress.Message}
		}
		if g != w {
			t.Fatalf("event %d = %+v, want %+v", i, g, w)
		}
	}
	if _, err := q.Next(ctx, 0); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("after drain: %v, want ErrClosed", err)
	}
	if err := q.Push(ctx, events.Event{End: &events.End{}}); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("push after close: %v", err)
	}
}

// A producer faster than the consumer is held back: pending bytes never
// exceed the bound, and every byte arrives once, in order.
func TestQueueBackpressure(t *testing.T) {
	const pendingMax = 64 << 10
	q := events.NewQueue(events.QueueConfig{MaxEvents: 8, MaxPendingOutput: pendingMax, MaxChunk: 16 << 10})
	ctx := context.Background()
	const total = 4 << 20
	src := make([]byte, total)
	for i := range src {
		src[i] = byte(i * 7)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for off := 0; off < total; off += 1000 {
			end := min(off+1000, total)
			if err := q.Output(ctx, "c", tools.Stdout, src[off:end]); err != nil {
				t.Error(err)
				return
			}
		}
		q.Close()
	}()
	var got bytes.Buffer
	var chunks int
	for {
		ev, err := q.Next(ctx, 0)
		if errors.Is(err, events.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c := ev.Progress.Output
		if c.Offset != uint64(got.Len()) {
			t.Fatalf("chunk offset %d, have %d bytes", c.Offset, got.Len())
		}
		if len(c.Data) > 16<<10 {
			t.Fatalf("chunk of %d bytes exceeds MaxChunk", len(c.Data))
		}
		if q.Len() > 8 {
			t.Fatalf("queue holds %d events, bound 8", q.Len())
		}
		got.Write(c.Data)
		chunks++
		if chunks%50 == 0 {
			time.Sleep(time.Millisecond) // a slow reader
		}
	}
	wg.Wait()
	if !bytes.Equal(got.Bytes(), src) {
		t.Fatal("output differs from input")
	}
	if chunks >= total/1000 {
		t.Fatalf("%d chunks for %d writes: output was not coalesced", chunks, total/1000)
	}
}

func TestQueueProducerUnblocksOnContext(t *testing.T) {
	q := events.NewQueue(events.QueueConfig{MaxEvents: 1})
	must(t, q.Push(context.Background(), events.Event{CallID: "a", Start: &events.Start{}}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := q.Push(ctx, events.Event{CallID: "a", End: &events.End{}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("push into full queue: %v, want deadline exceeded", err)
	}
}

func TestQueueKeepalive(t *testing.T) {
	q := events.NewQueue(events.QueueConfig{})
	ev, err := q.Next(context.Background(), 10*time.Millisecond)
	if err != nil || ev.Keepalive == nil || ev.Seq != 1 {
		t.Fatalf("got %+v, %v; want a keepalive with seq 1", ev, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Large output chunks reuse their buffers once released: what a consumer
// reads is never overwritten by later output, two streams at once included.
func TestQueueReleaseReusesBuffers(t *testing.T) {
	q := events.NewQueue(events.QueueConfig{MaxChunk: 128 << 10, MaxPendingOutput: 512 << 10})
	ctx := context.Background()
	const writes = 64
	block := func(stream tools.Stream, i int) []byte {
		return bytes.Repeat([]byte{byte('a' + i%26), byte(stream)}, 48<<10) // 96 KiB
	}
	var wg sync.WaitGroup
	for _, s := range []tools.Stream{tools.Stdout, tools.Stderr} {
		wg.Go(func() {
			for i := range writes {
				if err := q.Output(ctx, "c", s, block(s, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); q.Close() }()
	var got [4]bytes.Buffer
	for {
		ev, err := q.Next(ctx, 0)
		if errors.Is(err, events.ErrClosed) {
			break
		}
		must(t, err)
		o := ev.Progress.Output
		if uint64(got[o.Stream].Len()) != o.Offset {
			t.Fatalf("stream %d: chunk at %d after %d bytes", o.Stream, o.Offset, got[o.Stream].Len())
		}
		got[o.Stream].Write(o.Data)
		events.Release(&ev)
		if ev.Progress.Output.Data != nil {
			t.Fatal("Release left the data in the event")
		}
	}
	for _, s := range []tools.Stream{tools.Stdout, tools.Stderr} {
		var want bytes.Buffer
		for i := range writes {
			want.Write(block(s, i))
		}
		if !bytes.Equal(got[s].Bytes(), want.Bytes()) {
			t.Errorf("stream %d: %d bytes differ from the %d written", s, got[s].Len(), want.Len())
		}
	}
}
