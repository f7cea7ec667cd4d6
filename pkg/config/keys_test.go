package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A misspelled key names the key, where it is, and the key meant; a key
// nothing is close to lists the section's keys.
func TestLoadUnknownKey(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
		notWant    []string
	}{
		{"top level", "socket: x.sock\napprovl_mode: auto\n", []string{`line 2: unknown key "approvl_mode"`, `did you mean "approval_mode"?`}, []string{"config.Config", "not found"}},
		{"nested", "terminal:\n  shel: bash\n", []string{`line 2: unknown key "shel" in terminal`, `did you mean "shell"?`}, nil},
		{"nothing close", "zzzzzzzz: 1\n", []string{`unknown key "zzzzzzzz"`, "known keys: socket, socket_mode"}, []string{"did you mean"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "toold.yaml")
			if err := os.WriteFile(p, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if err == nil {
				t.Fatal("Load accepted an unknown key")
			}
			for _, w := range append([]string{p + ": "}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q contains %q", err, w)
				}
			}
		})
	}
}
