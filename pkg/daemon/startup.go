package daemon

import (
	"context"
	"errors"
	"runtime/trace"
	"sync"

	"github.com/toold/toold/pkg/tools/terminal"
)

// startTerminal sets up terminal_operations in a goroutine of its own: the
// egress proxy, the sandbox's policy and the terminal manager, whose probes
// (the command helper, the sandbox's namespaces) start processes and wait
// for them. Meanwhile Run opens memory, the journals and the rest; it calls
// the returned wait before it registers the tools, and again (deferred) on
// every return, so that nothing it started outlives a failed Run unseen.
// wait returns the set-up's error (later calls: the same). Without a shell
// m.terminal stays nil and m.terminalOff says why: every other tool still
// works.
//
// Run has built the policy (m.Capabilities) before; nothing else reads or
// writes what this goroutine sets (m.terminal, m.egress, m.terminalOff)
// until wait returns.
func (m *Main) startTerminal() (wait func() error) {
	done := make(chan error, 1)
	go func() {
		defer trace.StartRegion(context.Background(), "terminal").End()
		done <- m.setupTerminal()
	}()
	return sync.OnceValue(func() error { return <-done })
}

// setupTerminal is startTerminal's work.
func (m *Main) setupTerminal() error {
	cfg := &m.Config
	tcfg, err := terminalConfig(cfg.Terminal, m.ws, toolLimits(cfg.Output), m.Logger)
	if err != nil {
		return err
	}
	r := trace.StartRegion(context.Background(), "egress")
	err = m.startEgress(&tcfg)
	r.End()
	if err != nil {
		return err
	}
	r = trace.StartRegion(context.Background(), "hide")
	m.sandboxHide(&tcfg) // sandbox.go
	r.End()
	if m.stateLocked {
		// Background processes and sessions outlive this toold; the next
		// one on the state directory adopts them (docs/terminal.md).
		tcfg.StateDir = m.memory.stateDir
		tcfg.ConversationSecret = func(conv string) string {
			if m.exec == nil {
				return ""
			}
			secret, _ := m.exec.Conversations().Secret(conv)
			return secret
		}
	}
	if m.terminal, err = terminal.NewManager(tcfg); err != nil {
		m.terminal = nil
		if !errors.Is(err, terminal.ErrNoShell) {
			return err
		}
		// Without a shell (a minimal container image) every other tool
		// still works: start without terminal_operations and say why.
		m.terminalOff = err
		m.Logger.Warn("tool off", "tool", terminal.ToolName, "reason", err.Error())
		return nil
	}
	m.containCommands(&tcfg) // policy.go
	return nil
}

// startupSteps marks Run's steps as regions of an execution trace (toold
// --trace), so that a start-up trace shows where the time to SERVING goes.
// Without a trace running a region costs next to nothing.
type startupSteps struct {
	ctx context.Context
	r   *trace.Region
}

// next ends the current step and begins the one called name.
func (s *startupSteps) next(name string) {
	s.end()
	s.r = trace.StartRegion(s.ctx, name)
}

// end ends the current step.
func (s *startupSteps) end() {
	if s.r != nil {
		s.r.End()
		s.r = nil
	}
}
