package service_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

// fakeState is a func-field-free, hand-written ConversationState: a set of
// conversations that hold something, and a log of what was forgotten.
type fakeState struct {
	mu       sync.Mutex
	held     map[string]bool
	forgot   []string
	forgotCh chan string
}

func newFakeState() *fakeState {
	return &fakeState{held: map[string]bool{}, forgotCh: make(chan string, 100)}
}

func (f *fakeState) hold(conv string) {
	f.mu.Lock()
	f.held[conv] = true
	f.mu.Unlock()
}

func (f *fakeState) Holds(conv string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[conv]
}

func (f *fakeState) Forget(_ context.Context, conv string) {
	f.mu.Lock()
	delete(f.held, conv)
	f.forgot = append(f.forgot, conv)
	f.mu.Unlock()
	f.forgotCh <- conv
}

// welcome waits for the stream's Welcome.
func (c *convo) welcome() *pb.Welcome {
	c.t.Helper()
	evs := c.waitFor("welcome", func(evs []*pb.ServerEvent) bool {
		for _, e := range evs {
			if e.GetWelcome() != nil {
				return true
			}
		}
		return false
	})
	for _, e := range evs {
		if w := e.GetWelcome(); w != nil {
			return w
		}
	}
	panic("unreachable")
}

// refused waits for the stream to end and returns its status.
func (c *convo) refused() error {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.t.Fatal("the stream was not ended")
	}
	return c.err
}

// A conversation id is not a credential: joining a conversation that toold
// holds needs the secret its first stream got in Welcome. Without it the
// stream ends PERMISSION_DENIED and no call of it runs.
func TestConversationSecret(t *testing.T) {
	state := newFakeState()
	ran := make(chan string, 10)
	ts := append(testTools(nil), simple("mark", `{"type":"object"}`, func(_ context.Context, c *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		ran <- c.ConversationID
		return &tools.Result{Text: "ok"}, nil
	}))
	h := start(t, executor.Config{Conversations: executor.ConversationConfig{State: state, IdleTTL: time.Hour}}, ts...)

	first := h.open(&pb.Hello{ConversationId: "agent-1"})
	w := first.welcome()
	if w.GetConversationId() != "agent-1" || len(w.GetConversationSecret()) != 32 {
		t.Fatalf("welcome %v: want the id and a 32-hex-digit secret", w)
	}
	secret := w.GetConversationSecret()
	// A stream without Hello gets a conversation and a secret too, each
	// its own.
	anon := h.open(nil)
	anon.call("x", "think", `{"thought":"x"}`)
	aw := anon.welcome()
	if aw.GetConversationSecret() == "" || aw.GetConversationSecret() == secret || aw.GetConversationId() == "agent-1" {
		t.Fatalf("anonymous welcome %v", aw)
	}

	attacks := []struct {
		name  string
		hello *pb.Hello
	}{
		{"no secret", &pb.Hello{ConversationId: "agent-1"}},
		{"wrong secret", &pb.Hello{ConversationId: "agent-1", ConversationSecret: strings.Repeat("0", 32)}},
		{"another conversation's secret", &pb.Hello{ConversationId: "agent-1", ConversationSecret: aw.GetConversationSecret()}},
		{"a prefix of the secret", &pb.Hello{ConversationId: "agent-1", ConversationSecret: secret[:31]}},
		{"the secret and more", &pb.Hello{ConversationId: "agent-1", ConversationSecret: secret + "0"}},
	}
	for _, tt := range attacks {
		t.Run(tt.name, func(t *testing.T) {
			c := h.open(tt.hello)
			// May fail: the server ends the stream at the Hello.
			_ = c.stream.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "steal", Name: "mark"}}})
			err := c.refused()
			if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "conversation_secret") {
				t.Fatalf("stream ended with %v, want PERMISSION_DENIED naming conversation_secret", err)
			}
			if len(c.events) != 0 {
				t.Fatalf("the refused stream got events: %v", c.events)
			}
		})
	}
	select {
	case conv := <-ran:
		t.Fatalf("a refused stream ran a call in %q", conv)
	default:
	}

	// With the secret a second stream joins, while the first is attached
	// and after it left (the conversation holds something: it stays).
	second := h.open(&pb.Hello{ConversationId: "agent-1", ConversationSecret: secret})
	second.call("m", "mark", `{}`)
	if res, _ := second.end("m"); !res.GetSuccess() || <-ran != "agent-1" {
		t.Fatalf("joined call: %v", res)
	}
	if got := second.welcome().GetConversationSecret(); got != secret {
		t.Fatalf("a joining stream got secret %q, want the conversation's", got)
	}
	state.hold("agent-1")
	for _, c := range []*convo{first, second} {
		if err := c.closeSend(); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.open(&pb.Hello{ConversationId: "agent-1"}).refused(); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("after its streams left, the conversation was open to anyone: %v", err)
	}
	third := h.open(&pb.Hello{ConversationId: "agent-1", ConversationSecret: secret})
	third.call("m", "mark", `{}`)
	if res, _ := third.end("m"); !res.GetSuccess() {
		t.Fatalf("rejoined call: %v", res)
	}
	if err := third.closeSend(); err != nil {
		t.Fatal(err)
	}

	// A conversation that holds nothing is forgotten with its last stream:
	// its name is free again, under a new secret.
	if err := anon.closeSend(); err != nil {
		t.Fatal(err)
	}
	again := h.open(&pb.Hello{ConversationId: aw.GetConversationId()})
	if w := again.welcome(); w.GetConversationSecret() == aw.GetConversationSecret() {
		t.Fatal("a forgotten conversation's secret was handed out again")
	}

	// State toold holds outside the registry (another transport's
	// conversation, such as the MCP server's) cannot be joined at all.
	state.hold("mcp-session")
	if err := h.open(&pb.Hello{ConversationId: "mcp-session"}).refused(); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("joining a conversation held elsewhere: %v", err)
	}
}

// Idle conversations are reaped after the idle TTL, and beyond MaxIdle the
// one idle the longest is reaped at once; a reaped conversation's secret
// is forgotten and a conversation with a stream attached is never reaped.
func TestConversationReaping(t *testing.T) {
	state := newFakeState()
	h := start(t, executor.Config{Conversations: executor.ConversationConfig{State: state, IdleTTL: 200 * time.Millisecond, MaxIdle: 2}}, testTools(nil)...)
	attached := h.open(&pb.Hello{ConversationId: "attached"})
	attached.welcome()
	state.hold("attached")

	// Ten streams without Hello, each leaving state behind.
	var ids []string
	for range 10 {
		c := h.open(nil)
		c.call("x", "think", `{"thought":"x"}`)
		w := c.welcome()
		state.hold(w.GetConversationId())
		ids = append(ids, w.GetConversationId())
		if err := c.closeSend(); err != nil {
			t.Fatal(err)
		}
	}
	// Every one of them is forgotten: eight at once (beyond MaxIdle), the
	// last two after the TTL.
	deadline := time.After(10 * time.Second)
	forgot := map[string]bool{}
	for len(forgot) < len(ids) {
		select {
		case conv := <-state.forgotCh:
			forgot[conv] = true
		case <-deadline:
			t.Fatalf("forgotten %v of %v", forgot, ids)
		}
	}
	if forgot["attached"] || !state.Holds("attached") {
		t.Fatal("a conversation with a stream attached was reaped")
	}
	waitUntil(t, func() bool { all, _ := h.x.Conversations().Len(); return all == 1 })
	// A reaped conversation's name is free, under a new secret.
	c := h.open(&pb.Hello{ConversationId: ids[0]})
	if w := c.welcome(); w.GetConversationId() != ids[0] || w.GetConversationSecret() == "" {
		t.Fatalf("welcome %v", w)
	}
}
