// Package auditconfig is the audit log's configuration section ("audit:" in
// toold's YAML). It is owned by pkg/audit and imports nothing of toold's but
// the value types every section uses; the daemon's wiring turns it into an
// audit.Config.
package auditconfig

import (
	"fmt"
	"time"

	"github.com/toold/toold/pkg/config/value"
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
	SyncInterval value.Duration `yaml:"sync_interval"`
}

// On reports whether the audit log is enabled.
func (a Audit) On() bool { return a.Enabled == nil || *a.Enabled }

// Validate checks the section on its own.
func (a Audit) Validate() error {
	switch {
	case a.MaxFileBytes < 0:
		return fmt.Errorf("audit.max_file_bytes %d: want a positive size (0: the default, 64 MiB)", a.MaxFileBytes)
	case a.SyncEvery < 0:
		return fmt.Errorf("audit.sync_every %d: want a positive number (0: the default, 4096)", a.SyncEvery)
	case a.SyncInterval < 0:
		return fmt.Errorf("audit.sync_interval %s: want a positive duration", time.Duration(a.SyncInterval))
	}
	return nil
}
