package tools_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/dialect"
	"github.com/toold/toold/pkg/workspace"
)

// TestCodexSessions replays the shell calls of a real codex session
// (testdata/corpus/sessions/codex.json, extracted by extract_codex.py from
// the recording codex keeps in its repository) in the codex dialect and,
// as a call arrives without a dialect chosen, by its name and arguments
// alone: each must resolve to run_command with exactly the script the
// model wrote (["bash", "-lc", S] is S), the argv's joining reported.
// The commands are resolved and prepared, not run: the session's
// repository is not here.
func TestCodexSessions(t *testing.T) {
	b, err := os.ReadFile("testdata/corpus/sessions/codex.json")
	if err != nil {
		t.Fatal(err)
	}
	var sessions []struct {
		Source string `json:"source"`
		Calls  []struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(b, &sessions); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	reg := tools.NewRegistry()
	if err := reg.Register(daemon.BuiltinTools(ws, tools.Limits{}.WithDefaults(), authz.Capabilities{}, nil, nil, daemon.MoreOptions{})...); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterDialect(dialect.All()...); err != nil {
		t.Fatal(err)
	}
	total, ran := 0, 0
	for si, s := range sessions {
		for ci, c := range s.Calls {
			for _, d := range []string{"codex", ""} {
				total++
				var orig struct{ Command []string }
				if err := json.Unmarshal([]byte(c.Arguments), &orig); err != nil || len(orig.Command) != 3 || orig.Command[1] != "-lc" {
					t.Fatalf("%s call %d: not a bash -lc argv: %s", s.Source, ci, c.Arguments)
				}
				args, err := tools.DecodeArguments(c.Arguments)
				if err != nil {
					t.Fatal(err)
				}
				var target *tools.Target
				if d == "" {
					target, err = reg.Resolve(c.Name, args)
				} else {
					target, err = reg.ResolveCall(fmt.Sprintf("codex-%d", si), d, c.Name, args)
				}
				var cs []tools.Coercion
				if err == nil {
					cs, err = target.Prepare(args)
					cs = append(target.Repairs(), cs...)
				}
				switch {
				case err != nil:
					t.Errorf("%s call %d (dialect %q): %v", s.Source, ci, d, err)
				case target.Operation != "run_command" || args["command"] != orig.Command[2]:
					t.Errorf("%s call %d (dialect %q): %s %q, want run_command %q", s.Source, ci, d, target.Operation, args["command"], orig.Command[2])
				case !reported(cs, "/command"):
					t.Errorf("%s call %d (dialect %q): the argv's joining not reported: %v", s.Source, ci, d, cs)
				default:
					ran++
				}
			}
		}
	}
	t.Logf("codex sessions: %d sessions, %d calls replayed in the codex dialect and without: %d ran as meant", len(sessions), total/2, ran/2)
	if total == 0 || ran != total {
		t.Errorf("%d of %d replays ran as meant", ran, total)
	}
}

func reported(cs []tools.Coercion, field string) bool {
	for _, c := range cs {
		if c.Field == field {
			return true
		}
	}
	return false
}
