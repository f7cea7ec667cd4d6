// Package historyconfig is the call history's configuration section
// ("history:" in toold's YAML). It is owned by pkg/history and imports
// nothing of toold's but the value types every section uses, so pkg/config
// and toolctl do not link SQLite or PostgreSQL; the daemon's wiring turns
// it into a history.Config.
package historyconfig

import (
	"fmt"
	"time"

	"github.com/toold/toold/pkg/config/value"
)

// History configures the per-conversation call history.
//
//	history:
//	  backend: sqlite            # sqlite (default), postgres (memory.dsn unless dsn is set), or off
//	  path: /var/lib/toold/history.db  # default STATE_DIR/history.db
//	  max_age: 720h              # default 30 days
//	  max_entries: 100000
//	  max_arg_bytes: 4096
type History struct {
	Backend     string         `yaml:"backend"`
	Path        string         `yaml:"path"`
	DSN         string         `yaml:"dsn"`
	MaxAge      value.Duration `yaml:"max_age"`
	MaxEntries  int            `yaml:"max_entries"`
	MaxArgBytes int            `yaml:"max_arg_bytes"`
}

// Validate checks the section on its own; that a postgres backend has a
// DSN (its own or memory.dsn) is checked across sections by pkg/config.
func (h History) Validate() error {
	switch h.Backend {
	case "", "sqlite", "postgres", "off":
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
	return nil
}
