package fileops

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// newSensitiveTool is newTool with an Options.Sensitive that hides .env files and
// directories named secrets, and records the paths it was asked about.
func newSensitiveTool(t *testing.T, files map[string]string) (*FileOperations, string, func() []string) {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	var (
		mu    sync.Mutex
		asked []string
	)
	hidden := func(abs string) bool {
		mu.Lock()
		asked = append(asked, abs)
		mu.Unlock()
		base := filepath.Base(abs)
		return base == ".env" || base == "secrets"
	}
	return New(ws, tools.Limits{}, Options{Sensitive: hidden}), ws.Dir(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

func TestSensitiveWithheldFromWalks(t *testing.T) {
	f, wsDir, asked := newSensitiveTool(t, map[string]string{
		".env":              "API_KEY=sk-123\n",
		"app/.env":          "API_KEY=sk-456\n",
		"secrets/key.pem":   "sk-789\n",
		"main.go":           "// sk-000 is a fake key\n",
		"app/main.go":       "package app\n",
		"secretsnot/ok.txt": "sk-ok\n",
	})
	tests := []struct {
		op, args string
		want     []string
		not      []string
	}{
		{"grep_search", `{"pattern":"sk-","include":".env"}`,
			[]string{"No matches", "(3 sensitive entries withheld by policy.)"}, []string{"sk-123", "sk-456", "sk-789"}},
		{"grep_search", `{"pattern":"sk-"}`, []string{"main.go:1:", "withheld"}, []string{"sk-789"}},
		{"glob", `{"pattern":"**/.env"}`, []string{"No files match", "withheld"}, []string{"app/.env"}},
		{"glob", `{"pattern":"**/*.pem"}`, []string{"withheld"}, []string{"key.pem"}},
		{"list_dir", `{"depth":3}`, []string{"main.go", "secretsnot/", "sensitive entries withheld by policy"}, []string{".env", "secrets/", "key.pem"}},
		{"list_dir", `{"path":"app"}`, []string{"main.go", "(1 sensitive entry withheld by policy.)"}, []string{".env"}},
		// A path the model names is policy's to judge: not filtered.
		{"grep_search", `{"pattern":"sk-","path":"secrets"}`, []string{"secrets/key.pem:1:sk-789"}, []string{"withheld"}},
		{"list_dir", `{"path":"secrets"}`, []string{"key.pem"}, []string{"withheld"}},
		{"read_file", `{"path":".env"}`, []string{"sk-123"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.op+tt.args, func(t *testing.T) {
			res := mustRun(t, f, tt.op, tt.args)
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result does not contain %q:\n%s", w, res.Text)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(res.Text, n) {
					t.Errorf("result contains %q:\n%s", n, res.Text)
				}
			}
		})
	}
	for _, p := range asked() {
		if p != wsDir && !strings.HasPrefix(p, wsDir+"/") {
			t.Errorf("Sensitive was asked about %q, not an absolute path in the workspace", p)
		}
	}
}

func TestSensitiveNil(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, map[string]string{".env": "sk-1\n"})
	res := mustRun(t, f, "list_dir", `{}`)
	if !strings.Contains(res.Text, ".env") || strings.Contains(res.Text, "withheld") {
		t.Errorf("list_dir without Sensitive: %q", res.Text)
	}
}
