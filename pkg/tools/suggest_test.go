package tools_test

import (
	"strings"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// Suggestions never point to a riskier tool or to another family, and a
// family toold lacks is answered with what it offers. The registry is
// toold's real one, without dialects (the fuzzy path alone).
func TestSuggestionsStayInTheFamily(t *testing.T) {
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := tools.NewRegistry()
	if err := reg.Register(daemon.BuiltinTools(ws, tools.Limits{}.WithDefaults(), authz.Capabilities{}, newTerminal(t, ws), nil)...); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, args string
		want       string   // in the error
		never      []string // never in the error
	}{
		{"Task", `{"prompt":"explore","subagent_type":"x"}`, "toold runs no sub-agents", []string{"run_task"}},
		{"fill", `{"selector":"#a","value":"b"}`, "toold has no browser", []string{`"kill"`}},
		{"browser_click", `{"ref":"e1"}`, "toold has no browser", []string{`"kill"`}},
		{"find_file", `{"name":"x.py"}`, "call glob", []string{"read_file"}},
		{"read_mcp_resource", `{"uri":"x://y"}`, "not their resources", nil},
		{"edit_file", `{"path":"a","search":"x","replace":"y"}`, `unknown argument "replace"`, []string{`did you mean "replace_all"`}},
		{"raed_file", `{"path":"a"}`, `did you mean "read_file"`, nil},
		{"run_comand", `{"command":"ls"}`, `did you mean "run_command"`, nil},
	}
	for _, c := range cases {
		args, err := tools.DecodeArguments(c.args)
		if err != nil {
			t.Fatal(err)
		}
		target, err := reg.Resolve(c.name, args)
		if err == nil {
			_, err = target.Prepare(args)
		}
		if err == nil {
			t.Errorf("%s(%s): no error", c.name, c.args)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q lacks %q", c.name, err, c.want)
		}
		for _, n := range c.never {
			if strings.Contains(err.Error(), n) {
				t.Errorf("%s: %q points to %s", c.name, err, n)
			}
		}
	}
}
