package executor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/history"
	"github.com/toold/toold/pkg/testenv"
	"github.com/toold/toold/pkg/tools"
)

// fakeHistory keeps the entries recorded, in order.
type fakeHistory struct {
	mu      sync.Mutex
	entries []history.Entry
}

func (h *fakeHistory) Record(_ context.Context, e history.Entry) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append(h.entries, e)
	return int64(len(h.entries)), nil
}

func (h *fakeHistory) calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for _, e := range h.entries {
		ids = append(ids, e.CallID)
	}
	return ids
}

// auditKinds lists the records in the audit log's files as "call_id kind".
func auditKinds(t *testing.T, dir string) []string {
	t.Helper()
	recs, err := audit.Tail(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.CallID+" "+r.Kind)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// An ended call's records are made after its End, by the recorder
// (a linger no test reaches here): its history row and metrics, and the
// audit records of a call without an effect. A call with an effect has its
// decision and start in the file before it runs and its end queued in the
// audit log when it ends, as before. FlushRecords, and Shutdown, make
// what is deferred; nothing is lost and the order of calls is kept.
func TestRecordsAfterTheEnd(t *testing.T) {
	dir := t.TempDir()
	log, err := audit.Open(audit.Config{Dir: dir, SyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	h := &fakeHistory{}
	fast := &fnTool{name: "peek", fast: true}
	slow := &fnTool{name: "poke"}
	x := newExecutor(t, executor.Config{RecordLinger: time.Hour, Observe: executor.Observe{Audit: log, History: h}}, fast, slow)

	run := func(id, name string) {
		t.Helper()
		if end := x.Run(context.Background(), &executor.CallRequest{CallID: id, Name: name, ArgsJSON: `{"k":"v"}`}, &fakeHost{}); end.Err != nil {
			t.Fatalf("%s: %v", id, end.Err)
		}
	}
	run("a", "peek")
	run("b", "poke")
	if got := h.calls(); len(got) != 0 {
		t.Fatalf("history before a flush: %v, want nothing yet (recorded after the End)", got)
	}
	log.Flush()
	if got, want := auditKinds(t, dir), []string{"b decision", "b call.start", "b call.end"}; !equal(got, want) {
		t.Fatalf("audit log before a flush of the records: %v, want %v (the call with an effect only)", got, want)
	}

	if err := x.FlushRecords(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := h.calls(), []string{"a", "b"}; !equal(got, want) {
		t.Fatalf("history after FlushRecords: %v, want %v", got, want)
	}
	log.Flush()
	want := []string{"b decision", "b call.start", "b call.end", "a decision", "a call.start", "a call.end"}
	if got := auditKinds(t, dir); !equal(got, want) {
		t.Fatalf("audit log after FlushRecords: %v, want %v", got, want)
	}

	// Every call's start and end carry its arguments' digest, and its
	// history row the arguments, whenever they were made.
	recs, err := audit.Tail(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	digest := audit.Digest([]byte(`{"k":"v"}`))
	for _, r := range recs {
		if r.Kind != audit.KindDecision && r.ArgsDigest != digest {
			t.Fatalf("%s %s: args_digest %q, want %q", r.CallID, r.Kind, r.ArgsDigest, digest)
		}
	}
	for _, e := range h.entries {
		if e.Arguments != `{"k":"v"}` {
			t.Fatalf("history of %s: arguments %q", e.CallID, e.Arguments)
		}
	}

	run("c", "peek")
	x.Shutdown(context.Background())
	if got, want := h.calls(), []string{"a", "b", "c"}; !equal(got, want) {
		t.Fatalf("history after Shutdown: %v, want %v", got, want)
	}
	log.Flush()
	if got := auditKinds(t, dir); len(got) != 9 || got[8] != "c call.end" {
		t.Fatalf("audit log after Shutdown: %v, want c's three records last", got)
	}
}

// Without a flush, the recorder runs the records by itself once its
// linger has passed.
func TestRecordsRunAfterLinger(t *testing.T) {
	h := &fakeHistory{}
	x := newExecutor(t, executor.Config{RecordLinger: time.Millisecond, Observe: executor.Observe{History: h}}, &tools.Think{})
	defer x.Shutdown(context.Background())
	for _, id := range []string{"a", "b", "c"} {
		x.Run(context.Background(), &executor.CallRequest{CallID: id, Name: "think", ArgsJSON: `{"thought":"x"}`}, &fakeHost{})
	}
	testenv.Poll(t, 10*time.Second, "a, b, c recorded by the recorder", func() bool { return equal(h.calls(), []string{"a", "b", "c"}) })
}
