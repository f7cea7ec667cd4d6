package authz

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
)

func TestAppendRule(t *testing.T) {
	now := time.Date(2026, 11, 24, 23, 30, 0, 0, time.UTC)
	yamlPolicy := `# my policy
version: 1
rules:
  # keep pushes in check
  - name: no-push
    decision: ask
    tool: terminal_operations
    commands: ["git push"]
`
	tomlPolicy := `version = 1

[[rules]]
name = "no-push"
decision = "ask"
tool = "terminal_operations"
commands = ["git push"]
`
	cmdScope := Scope{ID: "cmd", Conversation: true, Tool: "terminal_operations", Operation: "run_command", CommandPrefix: "go test", Description: "go test commands"}
	cmdExample := map[string]any{"command": "go test ./..."}
	pathScope := Scope{Tool: "file_operations", Operation: "write_file", PathPrefix: "src", Description: "writes under src"}
	tests := []struct {
		name     string
		file     string
		content  string
		scope    Scope
		example  map[string]any
		wantErr  bool
		contains []string
	}{
		{name: "yaml keeps comments", file: "p.yaml", content: yamlPolicy, scope: cmdScope, example: cmdExample,
			contains: []string{"# my policy", "# keep pushes in check", "name: approved-terminal_operations-run_command-20261124T233000", "- go test", "command: go test ./..."}},
		{name: "toml", file: "p.toml", content: tomlPolicy, scope: cmdScope, example: cmdExample,
			contains: []string{`name = "no-push"`, `name = "approved-terminal_operations-run_command-20261124T233000"`}},
		{name: "new file", file: "new.yaml", scope: pathScope, example: map[string]any{"path": "src/a.go", "content": "x"},
			contains: []string{"- src/**"}},
		{name: "example the rule does not match", file: "p.yaml", content: yamlPolicy, scope: cmdScope,
			example: map[string]any{"command": "rm -rf build"}, wantErr: true},
		{name: "rules not a list", file: "p.yaml", content: "rules: {a: 1}\n", scope: cmdScope, example: cmdExample, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			if tt.content != "" {
				os.WriteFile(path, []byte(tt.content), 0o640)
			}
			err := AppendRule(path, RuleFromScope(tt.scope, tt.example, now))
			got, _ := os.ReadFile(path)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				if string(got) != tt.content {
					t.Fatalf("a refused rule changed the file:\n%s", got)
				}
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.contains {
				if !strings.Contains(string(got), c) {
					t.Errorf("missing %q in\n%s", c, got)
				}
			}
			p, err := LoadPolicy(path)
			if err != nil {
				t.Fatal(err)
			}
			names := p.RuleNames()
			if names[len(names)-1] != RuleFromScope(tt.scope, nil, now).Name {
				t.Fatalf("rules %v", names)
			}
			if tt.content != "" {
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
					t.Fatalf("mode %v", fi.Mode())
				}
			}
		})
	}
}
