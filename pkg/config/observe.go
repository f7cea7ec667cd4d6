package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/history"
	"github.com/toold/toold/pkg/hooks"
)

// Audit configures the tamper-evident audit log (see docs/audit.md).
//
//	audit:
//	  enabled: true              # default true
//	  dir: /var/lib/toold/audit  # default STATE_DIR/audit
//	  max_file_bytes: 67108864   # rotate past 64 MiB
//	  sync_every: 4096           # a machine crash loses at most this many records (and 100 ms)
//	  sync_interval: 100ms       # ... and at most this much time's worth
type Audit struct {
	// Enabled turns the log on (default) or off ("false").
	Enabled *bool `yaml:"enabled"`
	// Dir holds the log's files (default STATE_DIR/audit).
	Dir string `yaml:"dir"`
	// MaxFileBytes starts a new file past this size (default 64 MiB).
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// SyncEvery bounds the records written but not yet fsynced (default
	// 4096): what a power cut can lose, with SyncInterval.
	SyncEvery int `yaml:"sync_every"`
	// SyncInterval bounds how long a record stays unsynced (default 100ms).
	SyncInterval Duration `yaml:"sync_interval"`
}

// On reports whether the audit log is enabled.
func (a Audit) On() bool { return a.Enabled == nil || *a.Enabled }

// LogConfig returns the audit.Config under stateDir.
func (a Audit) LogConfig(stateDir string) audit.Config {
	dir := a.Dir
	if dir == "" {
		dir = filepath.Join(stateDir, "audit")
	}
	return audit.Config{Dir: dir, MaxFileBytes: a.MaxFileBytes, SyncEvery: a.SyncEvery, SyncInterval: time.Duration(a.SyncInterval)}
}

// History configures the per-conversation call history.
//
//	history:
//	  backend: sqlite            # sqlite (default), postgres (memory.dsn unless dsn is set), or off
//	  path: /var/lib/toold/history.db  # default STATE_DIR/history.db
//	  max_age: 720h              # default 30 days
//	  max_entries: 100000
//	  max_arg_bytes: 4096
type History struct {
	Backend     string   `yaml:"backend"`
	Path        string   `yaml:"path"`
	DSN         string   `yaml:"dsn"`
	MaxAge      Duration `yaml:"max_age"`
	MaxEntries  int      `yaml:"max_entries"`
	MaxArgBytes int      `yaml:"max_arg_bytes"`
}

// StoreConfig returns the history.Config.
func (h History) StoreConfig() history.Config {
	return history.Config{MaxAge: time.Duration(h.MaxAge), MaxEntries: h.MaxEntries, MaxArgBytes: h.MaxArgBytes}
}

// validateObserve checks audit, history and hooks.
func (c *Config) validateObserve() error {
	a := c.Audit
	switch {
	case a.MaxFileBytes < 0:
		return fmt.Errorf("audit.max_file_bytes %d: want a positive size (0: the default, 64 MiB)", a.MaxFileBytes)
	case a.SyncEvery < 0:
		return fmt.Errorf("audit.sync_every %d: want a positive number (0: the default, 4096)", a.SyncEvery)
	case a.SyncInterval < 0:
		return fmt.Errorf("audit.sync_interval %s: want a positive duration", time.Duration(a.SyncInterval))
	}
	h := c.History
	switch h.Backend {
	case "", "sqlite", "off":
	case "postgres":
		if h.DSN == "" && c.Memory.DSN == "" {
			return errors.New("history.backend postgres needs history.dsn (or memory.dsn)")
		}
	default:
		return fmt.Errorf("history.backend %q: want sqlite, postgres or off", h.Backend)
	}
	switch {
	case h.MaxAge < 0:
		return fmt.Errorf("history.max_age %s: want a positive duration", time.Duration(h.MaxAge))
	case h.MaxEntries < 0:
		return fmt.Errorf("history.max_entries %d: want a positive number", h.MaxEntries)
	case h.MaxArgBytes < 0:
		return fmt.Errorf("history.max_arg_bytes %d: want a positive number", h.MaxArgBytes)
	}
	return c.Hooks.Validate()
}

// HooksConfig is the hooks: section (see pkg/hooks):
//
//	hooks:
//	  pre:
//	    - name: guard
//	      match: ["run_command", "file_operations.*"]
//	      command: python3 /etc/toold/guard.py
//	      timeout: 10s
//	      on_error: block        # or proceed
//	  post:
//	    - command: /etc/toold/log.sh
type HooksConfig = hooks.Config
