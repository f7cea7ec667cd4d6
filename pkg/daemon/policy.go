package daemon

import (
	"path/filepath"

	"github.com/toold/toold/pkg/authz"
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
