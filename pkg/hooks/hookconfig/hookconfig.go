// Package hookconfig is the hooks' configuration section ("hooks:" in
// toold's YAML). It is owned by pkg/hooks and imports nothing of toold's, so
// pkg/config and toolctl do not link the hook runner.
package hookconfig

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// Hook is one configured command.
type Hook struct {
	// Name identifies the hook in logs, spans and the audit log (default:
	// the command).
	Name string `yaml:"name"`
	// Match lists patterns over the call's names: the flat name
	// ("read_file"), the tool ("file_operations") and "tool.operation"
	// ("file_operations.read_file"); * matches within a name
	// ("file_operations.*", "mcp__*"). Empty or ["*"] matches every call.
	Match []string `yaml:"match"`
	// Command is run by the shell.
	Command string `yaml:"command"`
	// Timeout bounds one run (default 60s, as Claude Code's).
	Timeout time.Duration `yaml:"timeout"`
	// OnError is "block" (default: a pre-hook that fails refuses the call)
	// or "proceed".
	OnError string `yaml:"on_error"`
}

// Config lists the hooks.
type Config struct {
	// Pre run before a call is authorized; Post after it ends.
	Pre  []Hook `yaml:"pre"`
	Post []Hook `yaml:"post"`
	// Shell runs the commands (default /bin/sh).
	Shell string `yaml:"shell"`
	// MaxOutputBytes bounds a hook's stdout (default 1 MiB).
	MaxOutputBytes int `yaml:"max_output_bytes"`
}

// Validate checks the patterns, commands, timeouts and on_error values.
func (c Config) Validate() error {
	for _, list := range []struct {
		key   string
		hooks []Hook
	}{{"hooks.pre", c.Pre}, {"hooks.post", c.Post}} {
		for i, h := range list.hooks {
			where := fmt.Sprintf("%s[%d]", list.key, i)
			if strings.TrimSpace(h.Command) == "" {
				return fmt.Errorf("%s: command is empty", where)
			}
			for _, p := range h.Match {
				if _, err := path.Match(p, ""); err != nil {
					return fmt.Errorf("%s: match %q: %w", where, p, err)
				}
			}
			if h.Timeout < 0 {
				return fmt.Errorf("%s: timeout %s: want a positive duration", where, h.Timeout)
			}
			switch h.OnError {
			case "", "block", "proceed":
			default:
				return fmt.Errorf("%s: on_error %q: want block or proceed", where, h.OnError)
			}
		}
	}
	if c.MaxOutputBytes < 0 {
		return fmt.Errorf("hooks.max_output_bytes %d: want a positive number", c.MaxOutputBytes)
	}
	return nil
}
