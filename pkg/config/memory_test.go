package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStateDir(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	cases := []struct {
		name, dir, xdg, want string
	}{
		{"configured", "/var/lib/toold", "/x", "/var/lib/toold"},
		{"home", "~/state", "", filepath.Join(home, "state")},
		{"xdg", "", "/xdg/state", "/xdg/state/toold"},
		{"relative xdg is ignored", "", "rel", filepath.Join(home, ".local/state/toold")},
		{"default", "", "", filepath.Join(home, ".local/state/toold")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			got, err := StateDir(tc.dir)
			if err != nil || got != tc.want {
				t.Fatalf("StateDir(%q) = %q, %v; want %q", tc.dir, got, err, tc.want)
			}
		})
	}
}
