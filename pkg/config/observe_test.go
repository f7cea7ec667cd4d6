package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestObserveConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{name: "hooks, history, audit", yaml: `
hooks:
  pre:
    - name: guard
      match: ["run_command", "file_operations.*"]
      command: python3 guard.py
      timeout: 10s
      on_error: proceed
  post:
    - command: ./log.sh
history: {backend: sqlite, max_age: 24h, max_entries: 10}
audit: {enabled: false, sync_every: 8}
`, check: func(t *testing.T, c Config) {
			h := c.Hooks.Pre[0]
			if h.Name != "guard" || h.Timeout != 10*time.Second || h.OnError != "proceed" || len(h.Match) != 2 || c.Hooks.Post[0].Command != "./log.sh" {
				t.Fatalf("hooks %+v", c.Hooks)
			}
			if c.Audit.On() || c.Audit.SyncEvery != 8 || time.Duration(c.History.MaxAge) != 24*time.Hour {
				t.Fatalf("audit %+v history %+v", c.Audit, c.History)
			}
		}},
		{name: "audit on by default", yaml: "{}", check: func(t *testing.T, c Config) {
			if !c.Audit.On() || c.Audit.Dir != "" {
				t.Fatal(c.Audit)
			}
		}},
		{name: "bad on_error", yaml: "hooks: {pre: [{command: x, on_error: shrug}]}", wantErr: "on_error"},
		{name: "empty hook command", yaml: "hooks: {post: [{command: ''}]}", wantErr: "hooks.post[0]: command is empty"},
		{name: "unknown hook key", yaml: "hooks: {pre: [{command: x, matcher: Bash}]}", wantErr: "matcher"},
		{name: "bad history backend", yaml: "history: {backend: redis}", wantErr: "history.backend"},
		{name: "postgres history needs a dsn", yaml: "history: {backend: postgres}", wantErr: "history.dsn"},
		{name: "negative sync_every", yaml: "audit: {sync_every: -1}", wantErr: "audit.sync_every"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "toold.yaml")
			os.WriteFile(p, []byte(tt.yaml), 0o600)
			c, err := Load(p)
			if err == nil {
				err = c.Validate()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}
