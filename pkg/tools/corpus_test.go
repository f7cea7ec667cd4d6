package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/dialect"
	"github.com/toold/toold/pkg/tools/terminal"
	"github.com/toold/toold/pkg/tools/web"
	"github.com/toold/toold/pkg/workspace"
)

// corpusCase is one tool call as a model emitted it, and what toold must
// make of it: either recovered (the tool, operation and arguments it
// resolves to, with the repairs reported) or an error naming the fix.
type corpusCase struct {
	ID     string `json:"id"`
	Class  string `json:"class"`
	Source string `json:"source"` // where models were seen doing this
	// Agent, for a call taken from an agent's published transcript, is the
	// agent whose model made it (agents.json).
	Agent string `json:"agent,omitempty"`
	Name  string `json:"name"`
	// Arguments is the argument text exactly as emitted.
	Arguments string `json:"arguments"`
	// Files seed the workspace; Run executes the call there. "$WORKSPACE"
	// in Arguments is replaced by the workspace's directory.
	Files map[string]string `json:"files,omitempty"`
	Run   bool              `json:"run,omitempty"`
	// Terminal gives the case a terminal manager (commands run for real).
	Terminal bool `json:"terminal,omitempty"`

	Tool      string          `json:"tool,omitempty"`
	Operation string          `json:"operation,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	// Reported are Coercion fields that must be reported ("name" for the
	// tool name, "" for the argument text, "/x" for an argument).
	Reported []string `json:"reported,omitempty"`

	ErrorClass string   `json:"error_class,omitempty"`
	Error      []string `json:"error,omitempty"`  // substrings of the error message
	Result     []string `json:"result,omitempty"` // substrings of the result text (Run)
}

var errClasses = map[string]error{
	"TOOL_NOT_FOUND":    errdefs.ErrToolNotFound,
	"INVALID_ARGUMENTS": errdefs.ErrInvalidArgument,
	"EXECUTION_FAILED":  errdefs.ErrFailed,
	"UNAVAILABLE":       errdefs.ErrUnavailable,
	"TIMEOUT":           errdefs.ErrTimeout,
}

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	files, err := filepath.Glob("testdata/corpus/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	var all []corpusCase
	ids := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cs []corpusCase
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range cs {
			if c.ID == "" || ids[c.ID] || c.Class == "" || c.Source == "" {
				t.Fatalf("%s: case %q needs a unique id, a class and a source", f, c.ID)
			}
			if (c.Tool == "") == (len(c.Error) == 0) {
				t.Fatalf("%s: case %s must be either recovered (tool) or an error, not both or neither", f, c.ID)
			}
			ids[c.ID] = true
			all = append(all, c)
		}
	}
	return all
}

// TestCorpus runs every call of the corpus through resolution, repair,
// coercion and validation (and, for Run cases, the tool in a workspace),
// and reports the size and pass rate by class.
func TestCorpus(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < 150 {
		t.Fatalf("corpus has %d cases, want at least 150", len(cases))
	}
	limits := tools.Limits{}.WithDefaults()
	type tally struct{ pass, recovered, explained, total int }
	byClass := map[string]*tally{}
	byAgent := map[string]*tally{}
	for _, c := range cases {
		tl := byClass[c.Class]
		if tl == nil {
			tl = &tally{}
			byClass[c.Class] = tl
		}
		tl.total++
		var ag *tally
		if c.Agent != "" {
			key := c.Agent + " " + c.Class
			if ag = byAgent[key]; ag == nil {
				ag = &tally{}
				byAgent[key] = ag
			}
			ag.total++
		}
		ok := t.Run(c.ID, func(t *testing.T) {
			dir := t.TempDir()
			for p, content := range c.Files {
				full := filepath.Join(dir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ws, err := workspace.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ws.Close() })
			var term *terminal.Manager
			if c.Terminal {
				term = newTerminal(t, ws)
			}
			reg := tools.NewRegistry()
			// web_search is offered only with a provider; the corpus's
			// calls to it are resolved and prepared, never sent (nothing
			// listens at the provider's address).
			more := daemon.MoreOptions{Web: web.Options{Search: web.SearchConfig{Provider: "searxng", URL: "http://127.0.0.1:1/"}}}
			if err := reg.Register(daemon.BuiltinTools(ws, limits, authz.Capabilities{}, term, nil, more)...); err != nil {
				t.Fatal(err)
			}
			if err := reg.RegisterDialect(dialect.All()...); err != nil {
				t.Fatal(err)
			}
			c.Arguments = strings.ReplaceAll(c.Arguments, "$WORKSPACE", ws.Dir())
			target, coercions, runErr, res := runCase(reg, c)
			if len(c.Error) > 0 {
				t.Logf("%s(%s) -> %v", c.Name, c.Arguments, runErr)
				if runErr == nil {
					t.Fatalf("%s(%s): no error; want one containing %q (resolved %v)", c.Name, c.Arguments, c.Error, target)
				}
				for _, want := range c.Error {
					if !strings.Contains(runErr.Error(), want) {
						t.Fatalf("%s(%s): error %q does not contain %q", c.Name, c.Arguments, runErr, want)
					}
				}
				if cl := errClasses[c.ErrorClass]; cl != nil && !errors.Is(runErr, cl) {
					t.Fatalf("error %v is not of class %s", runErr, c.ErrorClass)
				}
				return
			}
			if runErr != nil {
				t.Fatalf("%s(%s): %v", c.Name, c.Arguments, runErr)
			}
			if target.ToolName != c.Tool || target.Operation != c.Operation {
				t.Fatalf("resolved %s.%s, want %s.%s", target.ToolName, target.Operation, c.Tool, c.Operation)
			}
			if len(c.Reported) == 0 && len(c.Result) == 0 {
				t.Fatalf("a recovered case must name the repairs it expects reported, or the result text (got %+v)", coercions)
			}
			var fields []string
			for _, co := range coercions {
				fields = append(fields, co.Field)
			}
			for _, f := range c.Reported {
				if !slices.Contains(fields, f) {
					t.Fatalf("coercion of %q not reported; got %+v", f, coercions)
				}
			}
			if len(c.Args) > 0 {
				assertArgs(t, c.Args, target.Args)
			}
			if res != nil {
				t.Logf("%s(%s) => %s", c.Name, c.Arguments, res.Text)
			}
			for _, want := range c.Result {
				if res == nil || !strings.Contains(res.Text, want) {
					t.Fatalf("result %v does not contain %q", res, want)
				}
			}
		})
		if ok {
			tl.pass++
			if len(c.Error) == 0 && len(c.Reported) > 0 {
				tl.recovered++
			} else {
				tl.explained++
			}
			if ag != nil {
				ag.pass++
				if len(c.Error) == 0 {
					ag.recovered++ // ran as sent, or after the reported repairs
				} else {
					ag.explained++
				}
			}
		}
	}
	// Real agents' calls (agents.json): of the calls to tool families toold
	// has, at least 95% run as sent or after a reported repair; the others
	// (browser, sub-agents, MCP resources, finish/submit, SWE-agent's
	// open-file window) are answered with what toold offers instead.
	lacking := map[string]bool{"browser": true, "subagents": true, "mcp": true, "finish": true, "window": true}
	keys := make([]string, 0, len(byAgent))
	for k := range byAgent {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	has, ran := 0, 0
	for _, k := range keys {
		a := byAgent[k]
		t.Logf("agent %-22s %3d calls, %3d pass (%d ran as sent or repaired, %d answered with what toold offers)", k, a.total, a.pass, a.recovered, a.explained)
		if _, class, _ := strings.Cut(k, " "); !lacking[class] {
			has += a.total
			ran += a.recovered
		}
	}
	if has > 0 {
		t.Logf("real agents' calls to families toold has: %d of %d ran (%.1f%%)", ran, has, 100*float64(ran)/float64(has))
		if ran*100 < has*95 {
			t.Errorf("only %d of %d real agents' calls to families toold has ran; want at least 95%%", ran, has)
		}
	}
	classes := make([]string, 0, len(byClass))
	for k := range byClass {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	total, pass := 0, 0
	for _, k := range classes {
		tl := byClass[k]
		total += tl.total
		pass += tl.pass
		t.Logf("%-10s %3d cases, %3d pass (%d recovered with the repair reported, %d answered with the fix or next step)", k, tl.total, tl.pass, tl.recovered, tl.explained)
	}
	t.Logf("corpus: %d cases, %d pass", total, pass)
}

type resolved struct {
	ToolName, Operation string
	Args                map[string]any
}

// runCase does what the executor does with a call: decode, resolve,
// prepare, and for Run cases execute.
func runCase(reg *tools.Registry, c corpusCase) (*resolved, []tools.Coercion, error, *tools.Result) {
	args, err := tools.DecodeArguments(c.Arguments)
	if err != nil {
		return nil, nil, err, nil
	}
	target, err := reg.Resolve(c.Name, args)
	if err != nil {
		return nil, nil, err, nil
	}
	prepared, err := target.Prepare(args)
	coercions := append(target.Repairs(), prepared...)
	r := &resolved{target.ToolName, target.Operation, args}
	if err != nil {
		return r, coercions, err, nil
	}
	if !c.Run {
		return r, coercions, nil, nil
	}
	call := &tools.Call{ID: c.ID, Tool: target.ToolName, Operation: target.Operation, Args: args}
	target.Tool.Describe(call)
	res, err := target.Tool.Run(context.Background(), call, nopSink())
	return r, coercions, err, res
}

// newTerminal returns a terminal manager for ws with a hermetic HOME,
// closed when the test ends.
func newTerminal(t *testing.T, ws *workspace.Workspace) *terminal.Manager {
	t.Helper()
	m, err := terminal.NewManager(terminal.Config{
		Workspace: ws, Dir: t.TempDir(), KillGrace: 500 * time.Millisecond,
		Env: map[string]string{"HOME": t.TempDir()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close terminal manager: %v", err)
		}
	})
	return m
}

func TestMain(m *testing.M) {
	// Commands of the corpus run under toold's helper, which is this test
	// binary re-executed.
	sandbox.RunHelperIfRequested()
	os.Exit(m.Run())
}

func nopSink() *tools.Sink { return &tools.Sink{} }

func assertArgs(t *testing.T, want json.RawMessage, got map[string]any) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	_ = json.Unmarshal(b, &g)
	if !reflect.DeepEqual(w, g) {
		t.Fatalf("arguments %s, want %s", b, want)
	}
}
