package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/textcalls"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/dialect"
	"github.com/toold/toold/pkg/workspace"
)

// session is one published agent session, its calls in order
// (testdata/corpus/sessions; extract_sweagent.py writes swe-agent.json).
type session struct {
	Source string        `json:"source"`
	Calls  []sessionCall `json:"calls"`
}

// sessionCall is one call: the model's response in SWE-agent's text format
// (Response, with Action the command SWE-agent read from it) or a function
// call (Name, Arguments). Window is what SWE-agent's window showed after
// it, when it showed one.
type sessionCall struct {
	Response  string `json:"response,omitempty"`
	Action    string `json:"action,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Window    *struct {
		Lines int `json:"lines"`
		Above int `json:"above"`
		Below int `json:"below"`
		First int `json:"first"`
	} `json:"window,omitempty"`
}

// repoRoot is the repository's directory inside SWE-agent's container
// (/testbed, /marshmallow-code__marshmallow, /__Users__…): the replay
// rewrites it to the workspace, the one path rewrite the session corpus
// makes.
var repoRoot = regexp.MustCompile(`(^|["'\s=(])(/testbed|/[A-Za-z0-9_.-]+__[A-Za-z0-9_.-]+)(/|\b)`)

// TestSessions replays every call of SWE-agent's published trajectories in
// order, one conversation per trajectory, in the swe-agent dialect against
// toold's real tools in a temporary workspace: text-format responses go
// through toold's text-call parser (SWE-agent's format), function calls as
// made. Each call must resolve to what the model meant — a shell command
// to run_command with exactly the command the model wrote, a SWE-agent
// tool to its toold counterpart — or be answered with the fix (a family
// toold lacks, an edit form toold cannot read). File and window calls run
// (files SWE-agent showed are seeded with as many lines as its window
// said they had), and the first window each trajectory showed of a file
// must match SWE-agent's: the same total, lines above and below, and first
// line. Shell commands are resolved and prepared, not run: the
// trajectories' repositories are not here.
func TestSessions(t *testing.T) {
	b, err := os.ReadFile("testdata/corpus/sessions/swe-agent.json")
	if err != nil {
		t.Fatal(err)
	}
	var sessions []session
	if err := json.Unmarshal(b, &sessions); err != nil {
		t.Fatal(err)
	}
	limits := tools.Limits{}.WithDefaults()
	var total, ran, answered, windowsChecked int
	answeredBy, ranBy := map[string]int{}, map[string]int{}
	for si, s := range sessions {
		t.Run(fmt.Sprint(si), func(t *testing.T) {
			dir := t.TempDir()
			ws, err := workspace.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ws.Close() })
			reg := tools.NewRegistry()
			if err := reg.Register(daemon.BuiltinTools(ws, limits, authz.Capabilities{}, nil, nil, daemon.MoreOptions{})...); err != nil {
				t.Fatal(err)
			}
			if err := reg.RegisterDialect(dialect.All()...); err != nil {
				t.Fatal(err)
			}
			conv := fmt.Sprintf("session-%d", si)
			seen := map[string]bool{}
			for ci, c := range s.Calls {
				total++
				name, argsText := c.Name, c.Arguments
				if c.Name == "" {
					res, err := textcalls.Parse(c.Response, textcalls.SWEAgent)
					if err != nil || len(res.Calls) == 0 {
						// A response without a ``` block: SWE-agent read
						// the command (Action) from it another way.
						res, err = textcalls.Parse("```\n"+strings.TrimSpace(c.Action)+"\n```", textcalls.SWEAgent)
					}
					if err != nil || len(res.Calls) != 1 {
						t.Errorf("%s call %d: no call parsed from %q: %v", s.Source, ci, clip(c.Response), err)
						continue
					}
					name, argsText = res.Calls[0].Name, res.Calls[0].Arguments
					if res.Calls[0].Err != "" {
						answered++
						// SWE-agent's older edit forms (a selection, a file
						// argument) and EnIGMA's submit with a flag: the
						// parser's error names the signature to use.
						answeredBy[strings.Fields(c.Action + " ?")[0]+" (other form)"]++
						continue
					}
				}
				argsText = repoRoot.ReplaceAllString(argsText, "${1}"+dir+"${3}")
				args, err := tools.DecodeArguments(argsText)
				if err != nil {
					t.Errorf("%s call %d %s: %v", s.Source, ci, name, err)
					continue
				}
				orig, _ := tools.DecodeArguments(argsText)
				// Seed the file SWE-agent's window showed, before the first
				// call that shows it.
				if c.Window != nil {
					if p, _ := orig["path"].(string); p != "" && (name == "open") && !seen[p] {
						seen[p] = true
						full := p
						if !filepath.IsAbs(p) {
							full = filepath.Join(dir, p)
						}
						if _, err := os.Stat(full); err != nil {
							seen["seeded:"+p] = true
							var lines strings.Builder
							for i := 1; i <= c.Window.Lines; i++ {
								fmt.Fprintf(&lines, "line %d\n", i)
							}
							_ = os.MkdirAll(filepath.Dir(full), 0o755)
							if err := os.WriteFile(full, []byte(lines.String()), 0o644); err != nil {
								t.Fatal(err)
							}
						}
					}
				}
				target, err := reg.ResolveCall(conv, "swe-agent", name, args)
				if err == nil {
					_, err = target.Prepare(args)
				}
				if err != nil {
					if lacking(name) {
						answered++
						form := name
						if _, ok := orig["replacement_text"]; ok {
							form += " (line range)"
						}
						answeredBy[form]++
						continue
					}
					t.Errorf("%s call %d %s(%s): %v", s.Source, ci, name, clip(argsText), err)
					continue
				}
				// What the model meant: a command runs as written; a
				// SWE-agent tool runs as its counterpart.
				if name == "bash" {
					if target.Operation != "run_command" || args["command"] != orig["command"] {
						t.Errorf("%s call %d: bash %q resolved to %s %v", s.Source, ci, clip(argsText), target.Operation, args["command"])
						continue
					}
					ran++
					ranBy[name]++
					continue
				}
				call := &tools.Call{ID: fmt.Sprint(ci), ConversationID: conv, Tool: target.ToolName, Operation: target.Operation, Args: args}
				target.Tool.Describe(call)
				res, runErr := target.Tool.Run(context.Background(), call, nopSink())
				res, runErr = target.Shape(res, runErr)
				ran++
				ranBy[name]++
				if runErr != nil {
					t.Logf("%s call %d %s: %v", s.Source, ci, name, runErr)
					continue
				}
				// The window's arithmetic is checked against the trajectories
				// recorded with the tool bundles followed (the function-calling
				// ones; the text-format demonstrations were recorded by older
				// SWE-agent releases whose window was placed differently), on
				// the files the replay seeded.
				if c.Window != nil && c.Name == "open" && c.Window.First > 0 && seen["seeded:"+fmt.Sprint(orig["path"])] && !seen["checked:"+fmt.Sprint(orig["path"])] {
					seen["checked:"+fmt.Sprint(orig["path"])] = true
					windowsChecked++
					want := fmt.Sprintf("(%d lines total)]", c.Window.Lines)
					if c.Window.Above > 0 {
						want += fmt.Sprintf("\n(%d more lines above)", c.Window.Above)
					}
					want += fmt.Sprintf("\n%d:", c.Window.First)
					if !strings.Contains(res.Text, want) || c.Window.Below > 0 && !strings.HasSuffix(res.Text, fmt.Sprintf("(%d more lines below)", c.Window.Below)) {
						t.Errorf("%s call %d %s(%s): window\n%s\nwant SWE-agent's %+v", s.Source, ci, name, argsText, clip(res.Text), *c.Window)
					}
				}
			}
		})
	}
	t.Logf("SWE-agent sessions: %d trajectories, %d calls: %d ran as meant, %d answered with the fix %v; ran: %v; %d first windows match SWE-agent's", len(sessions), total, ran, answered, answeredBy, ranBy, windowsChecked)
	if ran+answered != total {
		t.Errorf("%d of %d calls neither ran nor were answered", total-ran-answered, total)
	}
	// Of the calls to families toold has (all but submit), at least 95% run.
	has := total - answeredBy["submit"] - answeredBy["submit (other form)"]
	if ran*100 < has*95 {
		t.Errorf("only %d of %d calls to families toold has ran; want at least 95%%", ran, has)
	}
}

// lacking reports the SWE-agent tools a call to which may be answered
// instead of run: submit (toold has none), edit without an open file or
// with search and replace the same.
func lacking(name string) bool { return name == "submit" || name == "edit" }

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
