package daemon

import (
	"context"
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools/fileops"
	"github.com/toold/toold/pkg/tools/terminal"
)

// conversationState adapts the terminal manager and the policy's grants to
// service.ConversationState: a conversation holds something while it has
// background processes, sessions, kept output or grants, and forgetting it
// ends and removes all of them.
type conversationState struct {
	term   *terminal.Manager
	grants authz.Granter // nil: the authorizer keeps no grants
}

func (c conversationState) Holds(conv string) bool {
	if c.term != nil && c.term.HoldsConversation(conv) {
		return true
	}
	return c.grants != nil && len(c.grants.Grants(conv)) > 0
}

func (c conversationState) Forget(ctx context.Context, conv string) {
	// Grants first: nothing more is allowed on the conversation's behalf
	// while its processes stop.
	if c.grants != nil {
		for _, g := range c.grants.Grants(conv) {
			c.grants.Revoke(g.ID)
		}
	}
	if c.term != nil {
		_ = c.term.ForgetConversation(ctx, conv)
	}
}

// leftoverBudget bounds the removal, at start, of the temporary files a
// toold that died left in the workspace.
const leftoverBudget = 30 * time.Second

// leftoverState is the background removal of leftovers started by Run.
type leftoverState struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startLeftovers removes, in the background and for at most
// leftoverBudget, the temporary files of atomic writes that a toold which
// no longer runs left in the workspace (fileops.RemoveLeftovers). The
// terminal manager does the same for output directories in its temp dir.
func (m *Main) startLeftovers() {
	ctx, cancel := context.WithTimeout(context.Background(), leftoverBudget)
	m.leftovers = leftoverState{cancel: cancel, done: make(chan struct{})}
	ws := m.ws
	go func() {
		defer close(m.leftovers.done)
		defer cancel()
		st, err := fileops.RemoveLeftovers(ctx, ws)
		switch {
		case err != nil:
			m.Logger.Warn("removing leftover temporary files", "err", err)
		case !st.Complete:
			m.Logger.Warn("removing leftover temporary files took too long; the rest is removed at the next start", "removed", st.Removed, "budget", leftoverBudget.String())
		case st.Removed > 0:
			m.Logger.Info("removed temporary files a toold that is gone left in the workspace", "removed", st.Removed)
		}
	}()
}

// stopLeftovers ends the removal and waits for it (it holds the
// workspace, which release closes).
func (m *Main) stopLeftovers() {
	if m.leftovers.cancel == nil {
		return
	}
	m.leftovers.cancel()
	<-m.leftovers.done
}
