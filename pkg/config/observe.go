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
//	  on_failure: refuse         # refuse (default): no call runs unrecorded; continue: calls run, failures are logged
//	  retention:
//	    max_bytes: 4294967296    # the files together (default 4 GiB; -1 keeps everything)
//	    max_age: 2160h           # files whose last record is older (default: no age limit)
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
	// OnFailure is what a call does when the log cannot record it (a full
	// disk): AuditRefuse (the default; the call ends UNAVAILABLE saying
	// why, nothing runs unrecorded) or AuditContinue (the call runs; the
	// failure is logged, and the log says how many records it lost once it
	// can write again).
	OnFailure string `yaml:"on_failure"`
	// Retention bounds the log's files.
	Retention AuditRetention `yaml:"retention"`
}

// Audit failure policies (audit.on_failure).
const (
	AuditRefuse   = "refuse"
	AuditContinue = "continue"
)

// DefaultAuditMaxBytes is audit.retention.max_bytes by default: 4 GiB.
const DefaultAuditMaxBytes = 4 << 30

// AuditRetention bounds the audit log: the oldest files are removed while
// the files together are larger than MaxBytes (0: the default, 4 GiB; -1:
// no limit), or when their last record is older than MaxAge (0: no limit).
// What was removed is recorded in the chain (docs/audit.md).
type AuditRetention struct {
	MaxBytes int64    `yaml:"max_bytes"`
	MaxAge   Duration `yaml:"max_age"`
}

// Continue reports whether calls run when the log cannot record them.
func (a Audit) Continue() bool { return a.OnFailure == AuditContinue }

// On reports whether the audit log is enabled.
func (a Audit) On() bool { return a.Enabled == nil || *a.Enabled }

// LogConfig returns the audit.Config under stateDir.
func (a Audit) LogConfig(stateDir string) audit.Config {
	dir := a.Dir
	if dir == "" {
		dir = filepath.Join(stateDir, "audit")
	}
	maxBytes := a.Retention.MaxBytes
	switch {
	case maxBytes == 0:
		maxBytes = DefaultAuditMaxBytes
	case maxBytes < 0:
		maxBytes = 0
	}
	return audit.Config{Dir: dir, MaxFileBytes: a.MaxFileBytes, SyncEvery: a.SyncEvery, SyncInterval: time.Duration(a.SyncInterval),
		MaxTotalBytes: maxBytes, MaxAge: time.Duration(a.Retention.MaxAge)}
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
	case a.OnFailure != "" && a.OnFailure != AuditRefuse && a.OnFailure != AuditContinue:
		return fmt.Errorf("audit.on_failure %q: want refuse (the default) or continue", a.OnFailure)
	case a.Retention.MaxBytes < -1:
		return fmt.Errorf("audit.retention.max_bytes %d: want a positive size (0: the default, 4 GiB; -1: keep everything)", a.Retention.MaxBytes)
	case a.Retention.MaxAge < 0:
		return fmt.Errorf("audit.retention.max_age %s: want a positive duration (0: no age limit)", time.Duration(a.Retention.MaxAge))
	case a.Retention.MaxBytes > 0 && a.Retention.MaxBytes < a.MaxFileBytes:
		return fmt.Errorf("audit.retention.max_bytes %d is smaller than audit.max_file_bytes %d: the log could not keep one whole file", a.Retention.MaxBytes, a.MaxFileBytes)
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
