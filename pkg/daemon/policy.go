package daemon

import (
	"path/filepath"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/tools/terminal"
)

// newEngine builds the policy engine from the configuration: the policy file
// (or the built-in rules), read roots, and toold's own secrets (its token
// file, policy file and config file), which calls may never read or change.
func (m *Main) newEngine() (*authz.Engine, error) {
	cfg := &m.Config
	var policy *authz.Policy
	if cfg.PolicyFile != "" {
		p, err := authz.LoadPolicy(cfg.PolicyFile)
		if err != nil {
			return nil, err
		}
		policy = p
	}
	var own []string
	// The state directory (and a memory database elsewhere) hold other
	// conversations' memories and, later, history: no call may touch them.
	for _, f := range []string{cfg.TokenFile, cfg.PolicyFile, cfg.Source, m.memory.stateDir, cfg.Memory.Path} {
		if f == "" {
			continue
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		own = append(own, abs)
	}
	eng, err := authz.NewEngine(authz.EngineConfig{
		Workspace: m.ws,
		Policy:    policy,
		Logger:    m.Logger,
		ReadRoots: cfg.ReadRoots,
		Sensitive: own,
	})
	if err != nil {
		return nil, err
	}
	if policy != nil {
		m.Logger.Info("policy loaded", "file", cfg.PolicyFile, "rules", len(policy.RuleNames()))
	}
	return eng, nil
}

// containCommands tells the policy engine which layers of the sandbox hold
// for the commands toold runs, as the terminal manager found them: with
// writes, reads and network all in force, AUTO runs what the judge finds no
// danger in without asking (docs/policy.md, "The judge is not the
// boundary"); with any missing, the judge is the boundary. Nothing to do
// when the daemon did not build the engine (a test's policy) or runs no
// commands.
func (m *Main) containCommands(tcfg *terminal.Config) {
	if m.engine == nil {
		return
	}
	var c authz.Containment
	for _, l := range m.terminal.Layers() {
		switch l.Name {
		case sandbox.LayerWrites:
			c.Writes = l.InForce
		case sandbox.LayerReads:
			c.Reads = l.InForce
		case sandbox.LayerNetwork:
			c.Network = l.InForce
		}
	}
	if tcfg.Sandbox != nil {
		for _, d := range tcfg.Sandbox.Writable {
			if abs, err := filepath.Abs(d); err == nil {
				c.Writable = append(c.Writable, abs)
			}
		}
	}
	if err := m.engine.SetContainment(c); err != nil {
		m.Logger.Warn("the judge treats commands as unsandboxed", "err", err)
		return
	}
	m.Logger.Info("judge", "commands_contained", c.Full())
}
