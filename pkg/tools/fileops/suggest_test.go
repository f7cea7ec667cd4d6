package fileops

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
)

// TestMissingPathSuggestions: a path that does not exist names the
// closest existing ones, never hidden (sensitive) or dot entries.
func TestMissingPathSuggestions(t *testing.T) {
	f, dir, _ := newSensitiveTool(t, map[string]string{
		"cmd/main.go":        "package main\n",
		"README.md":          "# r\n",
		"pkg/util/util.go":   "package util\n",
		"secrets/key.pem":    "KEY\n",
		"config/app.yaml":    "a: 1\n",
		".git/config":        "[core]\n",
		".hidden/notes.txt":  "n\n",
		"docs/guide.md":      "g\n",
		"docs/guide.md.orig": "g\n",
	})
	tests := []struct {
		op, args string
		want     []string // suggestions, in order; nil: none
	}{
		{"read_file", `{"path":"main.go"}`, []string{"cmd/main.go"}},
		{"read_file", `{"path":"cmd/mian.go"}`, []string{"cmd/main.go"}},
		{"read_file", `{"path":"README"}`, []string{"README.md"}},
		{"read_file", `{"path":"readme.md"}`, []string{"README.md"}},
		{"read_file", `{"path":"util.go"}`, []string{"pkg/util/util.go"}},
		{"read_file", `{"path":"file://` + "DIR" + `/README.md"}`, []string{"README.md"}},
		{"read_file", `{"path":"\"README.md\""}`, []string{"README.md"}},
		{"list_dir", `{"path":"pkg/utils"}`, []string{"pkg/util"}},
		{"read_file", `{"path":"key.pem"}`, nil},       // only under a hidden directory
		{"read_file", `{"path":"config"}`, nil},        // exists: not a missing-path error
		{"read_file", `{"path":"notes.txt"}`, nil},     // only under a dot directory
		{"read_file", `{"path":"nowhere/x.txt"}`, nil}, // nothing close
	}
	for _, tt := range tests {
		args := strings.ReplaceAll(tt.args, "DIR", dir)
		t.Run(tt.op+args, func(t *testing.T) {
			_, err := run(t, f, tt.op, args)
			if err == nil {
				t.Fatal("no error")
			}
			var de *errdefs.Error
			if !errors.As(err, &de) {
				t.Fatalf("unclassified error %v", err)
			}
			if fmt.Sprint(de.Suggestions) != fmt.Sprint(tt.want) {
				t.Fatalf("suggestions %q, want %q (error: %v)", de.Suggestions, tt.want, err)
			}
			if tt.want != nil {
				if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), fmt.Sprintf("did you mean %q", tt.want[0])) {
					t.Fatalf("error %v does not name %q", err, tt.want[0])
				}
			}
			if strings.Contains(err.Error(), "secrets") || strings.Contains(err.Error(), ".hidden") {
				t.Fatalf("error names a hidden path: %v", err)
			}
		})
	}
}
