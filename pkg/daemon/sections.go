package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/audit/auditconfig"
	"github.com/toold/toold/pkg/checkpoint"
	"github.com/toold/toold/pkg/checkpoint/checkpointconfig"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/history"
	"github.com/toold/toold/pkg/history/historyconfig"
	"github.com/toold/toold/pkg/memory"
	"github.com/toold/toold/pkg/memory/memconfig"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/terminal"
	"github.com/toold/toold/pkg/tools/terminal/termconfig"
	"github.com/toold/toold/pkg/workspace"
)

// This file turns each plugin's configuration section (a leaf package the
// plugin owns, composed by pkg/config) into the plugin's own Config: the
// one place where configuration meets the implementations.

// toolLimits returns the output limits for tools.
func toolLimits(o config.Output) tools.Limits {
	return tools.Limits{
		ReadBytes: o.ReadBytes, ReadLines: o.ReadLines, LineChars: o.LineChars,
		ListItems: o.ListItems, SearchMatches: o.SearchMatches, OutputBytes: o.OutputBytes,
	}.WithDefaults()
}

// terminalConfig returns the terminal manager's configuration for the
// terminal section over the workspace ws.
func terminalConfig(t termconfig.Terminal, ws *workspace.Workspace, limits tools.Limits, log *slog.Logger) (terminal.Config, error) {
	c := terminal.Config{
		Workspace:      ws,
		Shell:          t.Shell,
		SessionArgs:    t.SessionArgs,
		PassEnv:        t.PassEnv,
		Env:            t.Env,
		Runner:         sandbox.Runner{Helper: t.Helper, Args: t.HelperArgs},
		Supervision:    t.Supervision,
		KillGrace:      time.Duration(t.KillGrace),
		Dir:            t.Dir,
		KeepPerCall:    t.KeepPerCall,
		KeepTotal:      t.KeepTotal,
		KeepCount:      t.KeepCount,
		KeepAge:        time.Duration(t.KeepAge),
		SessionBuffer:  t.SessionBuffer,
		OrphanTimeout:  time.Duration(t.OrphanTimeout),
		KeepOnShutdown: t.KeepOnShutdown(),
		MaxProcesses:   t.MaxProcesses,
		MaxSessions:    t.MaxSessions,
		Limits:         limits,
		Logger:         log,
	}
	if err := t.Validate(); err != nil {
		return c, err
	}
	if t.Sandboxed() {
		// Without isolation (network: true), Landlock's TCP rule is what
		// network: false means.
		c.Sandbox = &sandbox.Policy{
			Writable: t.Writable, Hide: t.Hide, NoNetwork: t.Network.Off,
			Isolate: !t.Network.Direct, Pids: t.PidsMax, Memory: t.MemoryMax,
		}
		c.RequireSandbox = t.Sandbox == "require"
		c.GitWritable = t.GitWritable
		c.NoSecretGuard = t.SecretGuard != nil && !*t.SecretGuard
	}
	return c, nil
}

// auditConfig returns the audit log's configuration under stateDir.
func auditConfig(a auditconfig.Audit, stateDir string) audit.Config {
	dir := a.Dir
	if dir == "" {
		dir = filepath.Join(stateDir, "audit")
	}
	return audit.Config{Dir: dir, MaxFileBytes: a.MaxFileBytes, SyncEvery: a.SyncEvery, SyncInterval: time.Duration(a.SyncInterval),
		MaxTotalBytes: a.TotalBytes(), MaxAge: time.Duration(a.Retention.MaxAge)}
}

// historyConfig returns the history store's retention.
func historyConfig(h historyconfig.History) history.Config {
	return history.Config{MaxAge: time.Duration(h.MaxAge), MaxEntries: h.MaxEntries, MaxArgBytes: h.MaxArgBytes}
}

// memoryLimits returns the store's limits.
func memoryLimits(m memconfig.Memory) memory.Limits {
	return memory.Limits{MemoryBytes: m.Limits.MemoryBytes, ScopeMemories: m.Limits.ScopeMemories, ScopeBytes: m.Limits.ScopeBytes}
}

// memoryEmbedder returns the configured embedder, or nil (ranking by
// text only). The API key is read from the named variable now.
func memoryEmbedder(m memconfig.Memory) memory.Embedder {
	if m.Embeddings.URL == "" {
		return nil
	}
	e := &memory.OpenAIEmbedder{URL: m.Embeddings.URL, Model: m.Embeddings.Model}
	if m.Embeddings.APIKeyEnv != "" {
		e.APIKey = os.Getenv(m.Embeddings.APIKeyEnv)
	}
	return e
}

// checkpointConfig returns the checkpoint recorder's configuration for the
// checkpoints section over the workspace directory ws, its store in dir;
// secret tells the workspace's secrets (checkpoint.Config.Secret).
func checkpointConfig(c checkpointconfig.Checkpoints, ws, dir string, log *slog.Logger, secret func(string) bool) checkpoint.Config {
	return checkpoint.Config{Workspace: ws, StoreDir: dir, MaxBytes: c.MaxBytes, MaxFileBytes: c.MaxFileBytes, MaxCalls: c.MaxCalls, Logger: log,
		Secret: secret}
}
