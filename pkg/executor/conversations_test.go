package executor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/executor"
)

// A conversation restored with a verifier (a toold that adopted processes
// whose meta.json keeps no secret) is joined with the secret the verifier
// accepts, which then becomes its secret; any other is refused and changes
// nothing.
func TestConversationsRestoreVerified(t *testing.T) {
	r := executor.NewConversations(executor.ConversationConfig{State: holdsAll{}})
	defer r.Close()
	calls := 0
	r.RestoreVerified("conv-a", func(s string) bool { calls++; return s == "the-secret" })
	if s, ok := r.Secret("conv-a"); !ok || s != "" {
		t.Fatalf("Secret before a client came back = %q, %v; want \"\", true", s, ok)
	}
	for _, wrong := range []string{"", "guess", "the-secre"} {
		if _, _, _, err := r.Join("conv-a", wrong, ""); !errors.Is(err, errdefs.ErrDenied) {
			t.Fatalf("Join with %q: %v, want ErrDenied", wrong, err)
		}
		if _, err := r.Check("conv-a", wrong); !errors.Is(err, errdefs.ErrDenied) {
			t.Fatalf("Check with %q: %v, want ErrDenied", wrong, err)
		}
	}
	id, secret, leave, err := r.Join("conv-a", "the-secret", "")
	if err != nil || id != "conv-a" || secret != "the-secret" {
		t.Fatalf("Join with the secret: %q %q %v", id, secret, err)
	}
	leave()
	if s, _ := r.Secret("conv-a"); s != "the-secret" {
		t.Fatalf("Secret after the client came back = %q", s)
	}
	n := calls
	if _, err := r.Check("conv-a", "the-secret"); err != nil {
		t.Fatal(err)
	}
	if calls != n {
		t.Fatalf("the verifier was asked again once the secret was known")
	}
}

// holdsAll is a ConversationState that holds something of every
// conversation.
type holdsAll struct{}

func (holdsAll) Holds(string) bool              { return true }
func (holdsAll) Forget(context.Context, string) {}
