package service_test

import (
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/executor"
)

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// waitSpans waits until the recorder holds a toold.call span for each id.
func waitSpans(t *testing.T, h *harness, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ended := h.spans.Ended()
		calls := 0
		for _, s := range ended {
			if s.Name() == "toold.call" {
				calls++
			}
		}
		if calls >= n {
			return ended
		}
		if time.Now().After(deadline) {
			t.Fatalf("have %d call spans, want %d", calls, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSpanTree(t *testing.T) {
	h := start(t, executor.Config{}, testTools(nil)...)
	c := h.open(&pb.Hello{ConversationId: "conv-span"})
	c.call("ok", "echo", `{"text":"traced"}`)
	okRes, okEvents := c.end("ok")
	c.call("bad", "echo", `{"text":1}`)
	c.end("bad")
	const parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
		CallId: "child", Name: "think", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"thought":"x"}`},
		TraceContext: map[string]string{"traceparent": "00-" + parentTrace + "-00f067aa0ba902b7-01"},
	}}})
	_, childEvents := c.end("child")

	spans := waitSpans(t, h, 3)
	byCall := map[string]sdktrace.ReadOnlySpan{}
	children := map[string][]string{} // call span id -> child names
	for _, s := range spans {
		if s.Name() == "toold.call" {
			byCall[attrs(s)["toold.call_id"].AsString()] = s
		}
	}
	for _, s := range spans {
		if s.Name() == "toold.call" {
			continue
		}
		for id, cs := range byCall {
			if s.Parent().SpanID() == cs.SpanContext().SpanID() {
				children[id] = append(children[id], s.Name())
			}
		}
	}

	ok := byCall["ok"]
	a := attrs(ok)
	for k, want := range map[attribute.Key]string{
		"toold.tool": "echo", "toold.operation": "echo", "toold.call_id": "ok",
		"toold.conversation_id": "conv-span", "toold.outcome": "ok", "toold.risk": "low",
	} {
		if got := a[k].AsString(); got != want {
			t.Errorf("ok span %s = %q, want %q", k, got, want)
		}
	}
	if a["toold.result_bytes"].AsInt64() != int64(len(okRes.GetContent()[0].GetText())) {
		t.Errorf("result_bytes = %v", a["toold.result_bytes"])
	}
	if got := children["ok"]; !slices.Equal(got, []string{"toold.validate", "toold.authorize", "toold.execute"}) {
		t.Errorf("ok span children = %v, want validate, authorize, execute", got)
	}
	if okEvents[0].GetStart().GetTraceId() != ok.SpanContext().TraceID().String() {
		t.Error("ToolCallStart.trace_id does not name the call's trace")
	}

	bad := attrs(byCall["bad"])
	if bad["toold.outcome"].AsString() != "error" || bad["toold.error_code"].AsString() != "ERROR_CODE_INVALID_ARGUMENTS" {
		t.Errorf("bad span attributes = %v", bad)
	}
	if got := children["bad"]; !slices.Equal(got, []string{"toold.validate"}) {
		t.Errorf("bad span children = %v, want only validate", got)
	}

	child := byCall["child"]
	if child.SpanContext().TraceID().String() != parentTrace || child.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("child span trace %s parent %s: trace_context not honored", child.SpanContext().TraceID(), child.Parent().SpanID())
	}
	if childEvents[0].GetStart().GetTraceId() != parentTrace {
		t.Errorf("start trace id = %s", childEvents[0].GetStart().GetTraceId())
	}
	for _, s := range spans {
		if s.Name() == "toold.authorize" && s.Parent().SpanID() == ok.SpanContext().SpanID() {
			if len(s.Events()) == 0 || s.Events()[0].Name != "decision" {
				t.Errorf("authorize span has no decision event")
			}
		}
	}
}

// Without a tracer (no exporter) calls still get trace ids, generated
// locally, and a client's trace context is still followed.
func TestLocalTraceIDs(t *testing.T) {
	h := startTraced(t, false, executor.Config{}, testTools(nil)...)
	c := h.open(nil)
	c.call("a", "think", `{"thought":"x"}`)
	c.call("b", "think", `{"thought":"y"}`)
	_, ea := c.end("a")
	_, eb := c.end("b")
	ta, tb := ea[0].GetStart().GetTraceId(), eb[0].GetStart().GetTraceId()
	if len(ta) != 32 || ta == tb || ta == "00000000000000000000000000000000" {
		t.Fatalf("trace ids %q, %q: want two distinct ids", ta, tb)
	}
	const parent = "4bf92f3577b34da6a3ce929d0e0e4736"
	c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
		CallId: "c", Name: "think", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"thought":"z"}`},
		TraceContext: map[string]string{"traceparent": "00-" + parent + "-00f067aa0ba902b7-01"},
	}}})
	if _, ec := c.end("c"); ec[0].GetStart().GetTraceId() != parent {
		t.Fatalf("trace id %q, want the client's %s", ec[0].GetStart().GetTraceId(), parent)
	}
	if len(h.spans.Ended()) != 0 {
		t.Fatal("spans were recorded without a tracer")
	}
}
