package events_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func appendOne(t *testing.T, l *events.Log, ev events.Event) uint64 {
	t.Helper()
	seq, err := l.Append(context.Background(), ev)
	must(t, err)
	return seq
}

// kinds names events: start, end, progress:<msg>, out<stream>:<data>@<offset>.
func kinds(evs []events.Event) string {
	var b []string
	for _, ev := range evs {
		switch {
		case ev.Start != nil:
			b = append(b, "start")
		case ev.End != nil:
			b = append(b, "end")
		case ev.Progress != nil && ev.Progress.Output != nil:
			o := ev.Progress.Output
			b = append(b, "out"+string(rune('0'+int(o.Stream)))+":"+string(o.Data)+"@"+string(rune('0'+int(o.Offset))))
		case ev.Progress != nil:
			b = append(b, "progress:"+ev.Progress.Message)
		}
	}
	return strings.Join(b, " ")
}

// Seqs are assigned on append, in order; a call's output is coalesced into
// its stream's last unread chunk while no other event of the call came
// after it.
func TestLogOrderSeqAndCoalescing(t *testing.T) {
	l := events.NewLog(events.LogConfig{})
	ctx := context.Background()
	if s := appendOne(t, l, events.Event{CallID: "a", Start: &events.Start{}}); s != 1 {
		t.Fatalf("first seq %d", s)
	}
	must(t, l.Output(ctx, "a", tools.Stdout, []byte("hel")))
	must(t, l.Output(ctx, "a", tools.Stdout, []byte("lo")))
	must(t, l.Output(ctx, "a", tools.Stderr, []byte("w")))
	appendOne(t, l, events.Event{CallID: "a", Progress: &events.Progress{Message: "half"}})
	must(t, l.Output(ctx, "a", tools.Stdout, []byte("!")))
	if s := appendOne(t, l, events.Event{CallID: "a", End: &events.End{}}); s != 6 {
		t.Fatalf("end seq %d, want 6", s)
	}
	evs, err := l.Read(ctx, nil, 0, 0)
	must(t, err)
	if got, want := kinds(evs), "start out1:hello@0 out2:w@0 progress:half out1:!@5 end"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	// Read output is never coalesced into again.
	must(t, l.Output(ctx, "b", tools.Stdout, []byte("x")))
	evs, _ = l.Read(ctx, nil, 0, 0)
	must(t, l.Output(ctx, "b", tools.Stdout, []byte("y")))
	more, _ := l.Read(ctx, nil, 0, 0)
	if kinds(evs) != "out1:x@0" || kinds(more) != "out1:y@1" {
		t.Fatalf("got %q then %q", kinds(evs), kinds(more))
	}
}

// A reader that resumes reads again from any seq the tail still holds;
// the tail is bounded by events and bytes, and Rewind says where a replay
// starts when it no longer reaches back.
func TestLogTailAndRewind(t *testing.T) {
	l := events.NewLog(events.LogConfig{TailEvents: 3})
	ctx := context.Background()
	for range 5 {
		appendOne(t, l, events.Event{CallID: "a", Progress: &events.Progress{Message: "p"}})
	}
	evs, err := l.Read(ctx, nil, 0, 0)
	must(t, err)
	if len(evs) != 5 {
		t.Fatalf("read %d events", len(evs))
	}
	// The reader may not have sent what it took last: it is kept whole
	// until the reader reads again.
	if from := l.Rewind(0); from != 1 {
		t.Fatalf("Rewind(0) before the reader read again = %d, want 1", from)
	}
	if evs := l.TryRead(nil, 0); len(evs) != 5 {
		t.Fatalf("replayed %d events, want 5", len(evs))
	}
	l.TryRead(nil, 0) // the reader sent them: the tail keeps 3
	for _, tc := range []struct{ after, from uint64 }{
		{4, 5}, {2, 3}, {0, 3}, {9, 6},
	} {
		if from := l.Rewind(tc.after); from != tc.from {
			t.Fatalf("Rewind(%d) = %d, want %d", tc.after, from, tc.from)
		}
		evs, _ := l.TryRead(nil, 0), 0
		if len(evs) != int(6-tc.from) || (len(evs) > 0 && evs[0].Seq != tc.from) {
			t.Fatalf("after Rewind(%d): %d events from %v", tc.after, len(evs), evs)
		}
	}
	// Bytes bound the tail too.
	l = events.NewLog(events.LogConfig{TailBytes: 1000})
	for range 10 {
		must(t, l.Output(ctx, "c", tools.Stdout, make([]byte, 400)))
		l.TryRead(nil, 0)
	}
	if from := l.Rewind(0); from < 8 {
		t.Fatalf("a 1000-byte tail replays from seq %d (4000 bytes)", from)
	}
}

// Producers wait while MaxUnread events wait for the reader; a context
// ends the wait, Discard (nobody will read) ends it for good.
func TestLogBackpressure(t *testing.T) {
	l := events.NewLog(events.LogConfig{MaxUnread: 2, MaxUnreadOutput: 8})
	appendOne(t, l, events.Event{CallID: "a", Start: &events.Start{}})
	appendOne(t, l, events.Event{CallID: "a", Start: &events.Start{}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Append(ctx, events.Event{CallID: "a", End: &events.End{}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append into a full log: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(context.Background(), events.Event{CallID: "a", End: &events.End{}})
		done <- err
	}()
	l.TryRead(nil, 1)
	must(t, <-done)
	// Output waits too, and Discard lets everything through.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		must(t, l.Output(context.Background(), "b", tools.Stdout, make([]byte, 64)))
	}()
	l.Discard()
	wg.Wait()
	if _, err := l.Append(context.Background(), events.Event{CallID: "b", End: &events.End{}}); err != nil {
		t.Fatal(err)
	}
}

// Read waits for an event, says ErrIdle after the idle time, and after
// Close returns what is left, then ErrClosed; appends then fail.
func TestLogReadIdleClose(t *testing.T) {
	l := events.NewLog(events.LogConfig{})
	if _, err := l.Read(context.Background(), nil, 0, 5*time.Millisecond); !errors.Is(err, events.ErrIdle) {
		t.Fatalf("idle read: %v", err)
	}
	appendOne(t, l, events.Event{CallID: "a", End: &events.End{}})
	l.Close()
	evs, err := l.Read(context.Background(), nil, 0, 0)
	if len(evs) != 1 || err != nil {
		t.Fatalf("read after close: %d events, %v", len(evs), err)
	}
	if _, err := l.Read(context.Background(), nil, 0, 0); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("read of a drained closed log: %v", err)
	}
	if _, err := l.Append(context.Background(), events.Event{CallID: "a"}); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("append to a closed log: %v", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done is not closed")
	}
}

// The log is passive: an append only wakes the reader (Wake), and the
// reader takes every event appended meanwhile in one read, in order.
func TestLogAppendWakes(t *testing.T) {
	l := events.NewLog(events.LogConfig{})
	appendOne(t, l, events.Event{CallID: "a", Start: &events.Start{}})
	l.Force(events.Event{CallID: "a", End: &events.End{}})
	select {
	case <-l.Wake():
	default:
		t.Fatal("an append did not wake the reader")
	}
	evs := l.TryRead(nil, 0)
	if len(evs) != 2 || evs[0].Seq != 1 || evs[1].Seq != 2 {
		t.Fatalf("read %+v, want seqs 1 and 2 in one read", evs)
	}
	if l.HasUnread() {
		t.Fatal("events left unread")
	}
}

// The log tells its configured hooks of coalesced writes and of output
// nobody will read.
func TestLogCoalescedAndDropped(t *testing.T) {
	var coalesced, dropped int
	l := events.NewLog(events.LogConfig{Coalesced: func() { coalesced++ }, Dropped: func(n int) { dropped += n }})
	ctx := context.Background()
	must(t, l.Output(ctx, "a", tools.Stdout, []byte("ab")))
	must(t, l.Output(ctx, "a", tools.Stdout, []byte("cd")))
	must(t, l.Output(ctx, "a", tools.Stdout, []byte("ef")))
	l.Discard()
	must(t, l.Output(ctx, "a", tools.Stdout, []byte("ghi")))
	if coalesced != 2 || dropped != 3 {
		t.Fatalf("coalesced %d, dropped %d; want 2 and 3", coalesced, dropped)
	}
}

// A log at its tail's bound keeps exactly the last TailEvents events,
// intact and in order, however many pass through it (push reuses the
// slots trimmed from the front), and a reader that resumes reads them
// again.
func TestLogTailAtBound(t *testing.T) {
	const tail = 100
	l := events.NewLog(events.LogConfig{TailEvents: tail})
	for i := range 10_000 {
		appendOne(t, l, events.Event{CallID: strconv.Itoa(i), Progress: &events.Progress{Message: strconv.Itoa(i)}})
		if i%7 == 0 {
			l.TryRead(nil, 0)
		}
	}
	l.TryRead(nil, 0)
	l.TryRead(nil, 0) // the reader sent its last batch: it joins the tail
	if from := l.Rewind(0); from != 10_000-tail+1 {
		t.Fatalf("Rewind(0) = %d, want %d", from, 10_000-tail+1)
	}
	evs := l.TryRead(nil, 0)
	if len(evs) != tail {
		t.Fatalf("replayed %d events, want %d", len(evs), tail)
	}
	for i, ev := range evs {
		n := 10_000 - tail + i
		if ev.Seq != uint64(n+1) || ev.CallID != strconv.Itoa(n) || ev.Progress.Message != strconv.Itoa(n) {
			t.Fatalf("event %d: seq %d call %q message %q, want seq %d call %d", i, ev.Seq, ev.CallID, ev.Progress.Message, n+1, n)
		}
	}
}

// BenchmarkAppendAtTail is a call's three events appended to a log whose
// tail is full (the default 4096 events) and read, as on a busy stream.
func BenchmarkAppendAtTail(b *testing.B) {
	l := events.NewLog(events.LogConfig{})
	ctx := context.Background()
	start, end := &events.Start{Tool: "think"}, &events.End{}
	var buf []events.Event
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Append(ctx, events.Event{CallID: "c", Start: start}, events.Event{CallID: "c", Progress: &events.Progress{}}, events.Event{CallID: "c", End: end}); err != nil {
			b.Fatal(err)
		}
		buf = l.TryRead(buf[:0], 0)
	}
}

// With GatherBytes, Read waits while only a little output is unread (more
// of it coalesces into the chunk), takes it once GatherBytes are there, and
// stops waiting at once for any other event.
func TestLogGathersOutput(t *testing.T) {
	l := events.NewLog(events.LogConfig{GatherBytes: 100, GatherWait: time.Hour})
	ctx := context.Background()
	if err := l.Output(ctx, "c", tools.Stdout, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	// 10 bytes wait for more: Read ends with its context, taking nothing.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	evs, err := l.Read(short, nil, 0, 0)
	cancel()
	if len(evs) != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read %d events, %v; want it to wait for more output", len(evs), err)
	}
	// 90 more make 100: one chunk of them all.
	if err := l.Output(ctx, "c", tools.Stdout, make([]byte, 90)); err != nil {
		t.Fatal(err)
	}
	evs, err = l.Read(ctx, nil, 0, 0)
	if err != nil || len(evs) != 1 || len(evs[0].Progress.Output.Data) != 100 {
		t.Fatalf("read %v, %v; want one chunk of 100 bytes", evs, err)
	}
	// A little output and an End: no wait (the test would take an hour).
	if err := l.Output(ctx, "c", tools.Stdout, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, events.Event{CallID: "c", End: &events.End{}}); err != nil {
		t.Fatal(err)
	}
	evs, err = l.Read(ctx, nil, 0, 0)
	if err != nil || len(evs) != 2 || evs[1].End == nil {
		t.Fatalf("read %v, %v; want the output and the End", evs, err)
	}
}

// Output that a reader has not taken coalesces into one chunk even when it
// came in small pieces: once the chunk passes 64 KiB it moves to a buffer of
// MaxChunk (a pooled one) instead of growing by doubling, and its bytes stay
// exact and in order.
func TestLogSmallPiecesGrowIntoOneChunk(t *testing.T) {
	const maxChunk = 256 << 10
	l := events.NewLog(events.LogConfig{MaxChunk: maxChunk, MaxUnreadOutput: 1 << 20})
	ctx := context.Background()
	var want []byte
	for i := 0; len(want) < maxChunk; i++ {
		p := []byte(strings.Repeat(string(rune('a'+i%26)), min(10000, maxChunk-len(want))))
		must(t, l.Output(ctx, "a", tools.Stdout, p))
		want = append(want, p...)
	}
	evs, err := l.Read(ctx, nil, 0, 0)
	must(t, err)
	if len(evs) != 1 || evs[0].Progress == nil || evs[0].Progress.Output == nil {
		t.Fatalf("%d events, want one output chunk", len(evs))
	}
	got := evs[0].Progress.Output.Data
	if string(got) != string(want) {
		t.Fatalf("chunk of %d bytes differs from the %d written", len(got), len(want))
	}
	if cap(got) != maxChunk {
		t.Errorf("chunk buffer of capacity %d, want MaxChunk %d (moved once, not doubled)", cap(got), maxChunk)
	}
}

// Adopt keeps the buffer it is given as the chunk's data (no copy), at the
// stream's offset after what Output appended; bytes written next join it
// while it is unread; a piece that cannot be kept as it is (small) is
// copied; Adopt waits until the whole piece fits under MaxUnreadOutput;
// a closed log refuses.
func TestLogAdopt(t *testing.T) {
	const maxChunk = tools.OutputBufferSize
	l := events.NewLog(events.LogConfig{MaxChunk: maxChunk, MaxUnreadOutput: 2 * maxChunk})
	ctx := context.Background()
	must(t, l.Output(ctx, "a", tools.Stdout, []byte("head")))
	p := tools.OutputBuffer()[:100<<10]
	for i := range p {
		p[i] = byte('a' + i%26)
	}
	want := string(p)
	first := &p[0]
	must(t, l.Adopt(ctx, "a", tools.Stdout, p))
	must(t, l.Output(ctx, "a", tools.Stdout, []byte("tail")))
	small := tools.OutputBuffer()[:10]
	copy(small, "0123456789")
	appendOne(t, l, events.Event{CallID: "a", Progress: &events.Progress{Message: "m", Fraction: -1}})
	must(t, l.Adopt(ctx, "a", tools.Stdout, small))

	evs, err := l.Read(ctx, nil, 0, 0)
	must(t, err)
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4 (head, the adopted buffer with \"tail\", the message, the small piece)", len(evs))
	}
	head, kept, msg, copied := evs[0].Progress.Output, evs[1].Progress.Output, evs[2].Progress, evs[3].Progress.Output
	if string(head.Data) != "head" || head.Offset != 0 {
		t.Errorf("first chunk %q at %d", head.Data, head.Offset)
	}
	if kept.Offset != 4 || string(kept.Data) != want+"tail" {
		t.Errorf("adopted chunk at offset %d, %d bytes; want offset 4, the buffer's %d bytes and \"tail\"", kept.Offset, len(kept.Data), len(want))
	}
	if &kept.Data[0] != first {
		t.Error("the adopted buffer was copied, not kept")
	}
	if msg.Message != "m" || copied.Offset != 4+uint64(len(want))+4 || string(copied.Data) != "0123456789" || cap(copied.Data) == maxChunk {
		t.Errorf("small piece: %q at %d (capacity %d), want a copy of its own at %d", copied.Data, copied.Offset, cap(copied.Data), 4+len(want)+4)
	}

	// Two whole chunks unread: the third waits until the reader takes one.
	for range 2 {
		must(t, l.Adopt(ctx, "b", tools.Stdout, tools.OutputBuffer()[:maxChunk]))
	}
	done := make(chan error, 1)
	go func() { done <- l.Adopt(ctx, "b", tools.Stdout, tools.OutputBuffer()[:maxChunk]) }()
	select {
	case err := <-done:
		t.Fatalf("Adopt over MaxUnreadOutput returned at once: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if evs := l.TryRead(nil, 1); len(evs) != 1 {
		t.Fatalf("read %d events", len(evs))
	}
	must(t, <-done)
	evs = l.TryRead(nil, 0)
	if len(evs) != 2 || evs[1].Progress.Output.Offset != 2*maxChunk {
		t.Fatalf("after the wait: %d events, last at %d", len(evs), evs[len(evs)-1].Progress.Output.Offset)
	}

	l.Close()
	if err := l.Adopt(ctx, "b", tools.Stdout, tools.OutputBuffer()[:maxChunk]); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("Adopt on a closed log: %v", err)
	}
}

// filled is a buffer of the output pool holding n bytes of c.
func filled(c byte, n int) []byte {
	p := tools.OutputBuffer()[:n]
	for i := range p {
		p[i] = c
	}
	return p
}

// The adopted buffers' edges: an Adopt whose context ends while it waits
// for room gives up its piece (its buffer back in the pool) and leaves no
// event; a log closed with adopted chunks unread keeps them intact for the
// reader however much the pool is used meanwhile; a reader resuming
// before them replays them intact.
func TestLogAdoptEdges(t *testing.T) {
	const maxChunk = tools.OutputBufferSize
	l := events.NewLog(events.LogConfig{MaxChunk: maxChunk, MaxUnreadOutput: 2 * maxChunk})
	must(t, l.Adopt(context.Background(), "a", tools.Stdout, filled('a', maxChunk)))
	must(t, l.Adopt(context.Background(), "a", tools.Stdout, filled('b', maxChunk)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Adopt(ctx, "a", tools.Stdout, filled('x', maxChunk)) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Adopt waiting for room, its context canceled: %v", err)
	}
	l.Close()
	// The pool is used hard meanwhile: the canceled piece's buffer (back
	// in it) and others are written over.
	var held [][]byte
	for range 64 {
		held = append(held, filled('z', maxChunk))
	}
	for _, p := range held {
		tools.FreeBuffer(p)
	}
	check := func(evs []events.Event) {
		t.Helper()
		if len(evs) != 2 {
			t.Fatalf("%d events, want the 2 adopted chunks", len(evs))
		}
		for i, ev := range evs {
			o := ev.Progress.Output
			want := strings.Repeat(string(rune('a'+i)), maxChunk)
			if o.Offset != uint64(i*maxChunk) || string(o.Data) != want {
				t.Fatalf("chunk %d at offset %d: %d bytes, not the %c it was given (%q…)", i, o.Offset, len(o.Data), 'a'+i, o.Data[:min(16, len(o.Data))])
			}
		}
	}
	evs, err := l.Read(context.Background(), nil, 0, 0)
	must(t, err)
	check(evs)
	if l.Rewind(0) != 1 {
		t.Fatal("rewind to the start")
	}
	evs, err = l.Read(context.Background(), nil, 0, 0)
	must(t, err)
	check(evs)
	if _, err := l.Read(context.Background(), nil, 0, 0); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("read past the end of a closed log: %v", err)
	}
}

// The batch the reader took last stays in the log until it reads again,
// whatever the tail's bounds: a stream that drops while sending it got
// only its first events, and the stream that resumes after them replays
// the rest. The bounds apply to what it sent (it reads again only once it
// sent what it took), and the buffers of the batch are not handed out
// again meanwhile. (A batch read at once after a resume is the whole
// replayed tail and what came since: TestAttackAdoptedOutputBuffers/resume
// lost events its client never got when the log trimmed it at the read.)
func TestLogKeepsTheBatchBeingSent(t *testing.T) {
	const maxChunk = tools.OutputBufferSize
	ctx := context.Background()
	l := events.NewLog(events.LogConfig{MaxChunk: maxChunk, MaxUnreadOutput: 8 * maxChunk, TailBytes: 2 * (maxChunk + 64)})
	for c := range byte(4) {
		must(t, l.Adopt(ctx, "a", tools.Stdout, filled('a'+c, maxChunk)))
	}
	evs, err := l.Read(ctx, nil, 0, 0)
	must(t, err)
	if len(evs) != 4 {
		t.Fatalf("read %d events, want the 4 chunks", len(evs))
	}
	// Appended while the reader sends: it trims the tail, not the batch.
	must(t, l.Adopt(ctx, "a", tools.Stdout, filled('e', maxChunk)))
	// The pool is used hard meanwhile.
	var held [][]byte
	for range 64 {
		held = append(held, filled('z', maxChunk))
	}
	for _, p := range held {
		tools.FreeBuffer(p)
	}
	check := func(evs []events.Event, from int) {
		t.Helper()
		for i, ev := range evs {
			o, c := ev.Progress.Output, 'a'+from-1+i
			if ev.Seq != uint64(from+i) || o.Offset != uint64((from-1+i)*maxChunk) || string(o.Data) != strings.Repeat(string(rune(c)), maxChunk) {
				t.Fatalf("event %d: seq %d at offset %d, %d bytes, not the %c it was given (%q…)", i, ev.Seq, o.Offset, len(o.Data), c, o.Data[:min(16, len(o.Data))])
			}
		}
	}
	check(evs, 1)
	// The stream got the first chunk and dropped.
	if from := l.Rewind(1); from != 2 {
		t.Fatalf("resumed after 1 while the batch 1-4 was being sent: replay from %d, want 2", from)
	}
	evs, err = l.Read(ctx, nil, 0, 0)
	must(t, err)
	if len(evs) != 4 {
		t.Fatalf("replayed %d events, want 2-5", len(evs))
	}
	check(evs, 2)
	// Sent: the tail keeps two chunks of it (its bytes), then the batch.
	if evs := l.TryRead(nil, 0); len(evs) != 0 {
		t.Fatalf("%d more events", len(evs))
	}
	if from := l.Rewind(0); from != 4 {
		t.Fatalf("Rewind(0) after the batch was sent = %d, want 4 (a tail of 2 chunks)", from)
	}
	evs = l.TryRead(nil, 0)
	check(evs, 4)
}
