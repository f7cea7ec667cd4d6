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
	SyncInterval value.Duration `yaml:"sync_interval"`
	// OnFailure is what a call does when the log cannot record it (a full
	// disk): Refuse (the default; the call ends UNAVAILABLE saying why,
	// nothing runs unrecorded) or Continue (the call runs; the failure is
	// logged, and the log says how many records it lost once it can write
	// again).
	OnFailure string `yaml:"on_failure"`
	// Retention bounds the log's files.
	Retention Retention `yaml:"retention"`
}

// Failure policies (audit.on_failure).
const (
	Refuse   = "refuse"
	Continue = "continue"
)

// DefaultMaxBytes is audit.retention.max_bytes by default: 4 GiB.
const DefaultMaxBytes = 4 << 30

// Retention bounds the audit log: the oldest files are removed while the
// files together are larger than MaxBytes (0: the default, 4 GiB; -1: no
// limit), or when their last record is older than MaxAge (0: no limit).
// What was removed is recorded in the chain (docs/audit.md).
type Retention struct {
	MaxBytes int64          `yaml:"max_bytes"`
	MaxAge   value.Duration `yaml:"max_age"`
}

// Continue reports whether calls run when the log cannot record them.
func (a Audit) Continue() bool { return a.OnFailure == Continue }

// TotalBytes is the retention's size bound for the log: the default when
// unset, 0 (no limit) for -1.
func (a Audit) TotalBytes() int64 {
	switch n := a.Retention.MaxBytes; {
	case n == 0:
		return DefaultMaxBytes
	case n < 0:
		return 0
	default:
		return n
	}
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
	case a.OnFailure != "" && a.OnFailure != Refuse && a.OnFailure != Continue:
		return fmt.Errorf("audit.on_failure %q: want refuse (the default) or continue", a.OnFailure)
	case a.Retention.MaxBytes < -1:
		return fmt.Errorf("audit.retention.max_bytes %d: want a positive size (0: the default, 4 GiB; -1: keep everything)", a.Retention.MaxBytes)
	case a.Retention.MaxAge < 0:
		return fmt.Errorf("audit.retention.max_age %s: want a positive duration (0: no age limit)", time.Duration(a.Retention.MaxAge))
	case a.Retention.MaxBytes > 0 && a.Retention.MaxBytes < a.MaxFileBytes:
		return fmt.Errorf("audit.retention.max_bytes %d is smaller than audit.max_file_bytes %d: the log could not keep one whole file", a.Retention.MaxBytes, a.MaxFileBytes)
	}
	return nil
}
