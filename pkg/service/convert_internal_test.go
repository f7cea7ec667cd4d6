package service

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/tools"
)

// The sender's reused messages (sendScratch) convert every event as a
// fresh conversion does, whatever the event before them left in the
// scratch: a rich End (JSON, structured data, metadata, coercions, an
// error) followed by a plain one, a Start after a Start with a trace id.
func TestSendScratchConvertsAsFresh(t *testing.T) {
	at := time.Unix(1700000000, 123456789)
	evs := []events.Event{
		{CallID: "1", Seq: 1, Time: at, Start: &events.Start{RequestedName: "Think", Tool: "think", Operation: "think", Display: "Thinking", Risk: tools.RiskLow, TraceID: "0123456789abcdef0123456789abcdef"}},
		{CallID: "1", Seq: 2, Time: at, Executing: &events.Executing{PID: 42}},
		{CallID: "1", Seq: 3, Time: at, End: &events.End{Duration: 1500 * time.Millisecond,
			Result: &tools.Result{Text: "done", JSON: json.RawMessage(`{"a":1}`), Structured: map[string]any{"n": 1.0},
				Metadata: map[string]any{"k": "v"}, Truncation: &tools.Truncation{ShownBytes: 1, TotalBytes: 2}},
			Coercions: []tools.Coercion{{Field: "x", From: `"1"`, To: "1", Rule: "string to integer"}}}},
		{CallID: "2", Seq: 4, Time: at, Start: &events.Start{RequestedName: "think"}},
		{CallID: "2", Seq: 5, Time: at, Executing: &events.Executing{}},
		{CallID: "2", Seq: 6, Time: at, End: &events.End{Duration: 7 * time.Microsecond, Result: &tools.Result{Text: "Thought recorded."}}},
		{CallID: "3", Seq: 7, Time: at, End: &events.End{Duration: time.Millisecond, Err: errdefs.New(errdefs.ErrInvalidArgument, "no such file")}},
		{CallID: "4", Seq: 8, Time: at, End: &events.End{Err: errors.New("boom")}},
		{CallID: "5", Seq: 9, Time: at, End: &events.End{}},
		{CallID: "5", Seq: 10, Time: at, Progress: &events.Progress{Message: "half", Fraction: 0.5}},
		{Seq: 10, Time: at, Keepalive: &events.Keepalive{}},
		{CallID: "6", Seq: 11, Time: at, End: &events.End{Result: &tools.Result{Text: "again"}}},
	}
	var sc sendScratch
	for i := range evs {
		got := sc.convert(&evs[i])
		want := eventToPB(&evs[i])
		if !proto.Equal(want, got) {
			t.Errorf("event %d:\nfresh   %s\nscratch %s", i, prototext.Format(want), prototext.Format(got))
		}
		// What goes on the wire is the same too.
		det := proto.MarshalOptions{Deterministic: true}
		wb, _ := det.Marshal(want)
		gb, _ := det.Marshal(got)
		if string(wb) != string(gb) {
			t.Errorf("event %d: marshaled differently", i)
		}
	}
}

// A Fast call's Start, Executing and End (a text result) convert without
// an allocation.
func TestSendScratchAllocations(t *testing.T) {
	at := time.Now()
	evs := []events.Event{
		{CallID: "1", Seq: 1, Time: at, Start: &events.Start{RequestedName: "think", Tool: "think", Operation: "think", Display: "Thinking"}},
		{CallID: "1", Seq: 2, Time: at, Executing: &events.Executing{}},
		{CallID: "1", Seq: 3, Time: at, End: &events.End{Duration: time.Microsecond, Result: &tools.Result{Text: "Thought recorded."}}},
	}
	var sc sendScratch
	for i := range evs {
		if n := testing.AllocsPerRun(100, func() { sc.convert(&evs[i]) }); n != 0 {
			t.Errorf("event %d: %v allocations, want 0", i, n)
		}
	}
}

// structOf's flat fast path gives what the JSON round trip gives, and
// leaves to it what it cannot convert as the round trip does.
func TestStructOfFlatAsNormalized(t *testing.T) {
	for _, m := range []map[string]any{
		{"path": "a.go", "size": int64(4096), "start_line": 1, "end_line": 80, "total_lines": 80, "final_newline": true},
		{"n": 1.5, "big": int64(1<<53 + 1), "neg": -3, "nil": nil, "s": "<tag> & \"q\" ✓"},
		{"bad": "a\xffb"},
		{"k\xff": 1},
		{"nan": math.NaN()},
		{"list": []string{"a"}, "n": json.Number("2")},
		{"u": uint(3)},
	} {
		want, err := structpb.NewStruct(normalize(m).(map[string]any))
		if err != nil {
			want = nil
		}
		if got := structOf(m); !proto.Equal(got, want) {
			t.Errorf("structOf(%v) = %v, want %v", m, got, want)
		}
	}
}
