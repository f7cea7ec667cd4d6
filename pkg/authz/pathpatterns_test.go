package authz

import "testing"

func TestPathPattern(t *testing.T) {
	sc := pathScope{ws: "/w", homes: []string{"/h"}}
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"~/.ssh", "/h/.ssh/id_rsa", true},
		{"~/.ssh", "/h/.sshx", false},
		{"~/.ssh", "/w/.ssh", false},
		{"/etc/shadow", "/etc/shadow", true},
		{"/etc", "/etc/x/y", true},
		{".github/workflows", "/w/.github/workflows/ci.yml", true},
		{".github/workflows", "/x/.github/workflows/ci.yml", false},
		{"**/.git/hooks", "/w/a/b/.git/hooks/pre-commit", true},
		{"*.pem", "/w/a/b.pem", true},
		{"*.pem", "/elsewhere/b.pem", true},
		{"*.pem", "/w/a.pem.txt", false},
		{"node_modules", "/w/a/node_modules/x/y", true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"~"+tc.path, func(t *testing.T) {
			pp, err := compilePathPattern(tc.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := pp.match(tc.path, sc); got != tc.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}
