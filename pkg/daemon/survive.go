package daemon

import (
	"context"
	"time"

	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/history"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/terminal"
)

// interruptedWhy is the result of a call whose command a toold that died
// was running.
const interruptedWhy = "interrupted by a restart: toold ended while the command ran, and the command was stopped with it; run it again (use is_background for commands that must outlive toold)"

// adoptTerminal makes what the terminal adopted from the toold before
// this one reachable again (docs/terminal.md, "What survives a restart"):
// the conversations of adopted processes and sessions are registered with
// the verifiers of the secrets their clients had (never the secrets), and the foreground commands that were
// running when that toold died get their end recorded in the history and
// the audit log.
func (m *Main) adoptTerminal() {
	if m.terminal == nil {
		return
	}
	term := m.terminal
	for conv, verifier := range term.Adopted() {
		if verifier == "" {
			m.exec.Conversations().Restore(conv, "") // reached by nobody: reaped
			continue
		}
		m.exec.Conversations().RestoreVerified(conv, func(secret string) bool { return term.VerifySecret(conv, secret) })
	}
	for _, c := range m.terminal.Interrupted() {
		m.Logger.Warn("call interrupted by a restart", "conversation_id", c.Conversation, "call_id", c.CallID, "command", tools.Clip(c.Command, 200))
		if w := m.observe.historyW; w != nil {
			e := history.Entry{Conversation: c.Conversation, CallID: c.CallID, Name: "run_command", Tool: terminal.ToolName,
				Operation: "run_command", Outcome: "error", Code: "UNAVAILABLE",
				Summary: interruptedWhy + " (" + tools.Clip(c.Command, 120) + ")", Started: c.Started, Ended: time.Now()}
			if _, err := w.Record(context.Background(), e); err != nil {
				m.Logger.Error("history: recording an interrupted call failed", "call_id", c.CallID, "err", err)
			}
		}
		if a := m.observe.audit; a != nil {
			if _, err := a.Append(audit.Record{Kind: audit.KindCallEnd, Conversation: c.Conversation, CallID: c.CallID,
				Tool: terminal.ToolName, Operation: "run_command", Outcome: "error", Code: "UNAVAILABLE", Detail: interruptedWhy}); err != nil {
				m.Logger.Error("audit: recording an interrupted call failed", "call_id", c.CallID, "err", err)
			}
		}
	}
}
