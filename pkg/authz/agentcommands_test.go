package authz_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools"
)

// agentCommand is one command a real agent ran (testdata/agentcommands).
type agentCommand struct {
	Instance string `json:"instance"`
	Command  string `json:"command"`
}

func loadAgentCommands(t *testing.T) []agentCommand {
	t.Helper()
	f, err := os.Open("testdata/agentcommands/mini-swe-agent-deepseek-chat.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []agentCommand
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c agentCommand
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// containedEngine is an engine whose command lines run in a sandbox with
// every layer in force, as toold's default configuration runs them;
// fixture's base/tmp stands for the commands' temp directory.
func (f *fixture) containedEngine(t testing.TB, policy *authz.Policy) *authz.Engine {
	t.Helper()
	mkdir(t, f.base+"/tmp")
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: f.w, Policy: policy, Home: f.home, ReadRoots: []string{f.rr},
		Containment: authz.Containment{Writes: true, Reads: true, Network: true, Writable: []string{f.base + "/tmp"}}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// askRate replays the agent's commands through e in mode (their /testbed
// is the fixture's workspace) and returns how many were asked about or
// denied, with the commands by the rule that decided.
func askRate(t *testing.T, f *fixture, e *authz.Engine, mode authz.Mode, cmds []agentCommand) (asks, denies int, byRule map[string][]string) {
	t.Helper()
	byRule = map[string][]string{}
	for _, c := range cmds {
		line := strings.ReplaceAll(c.Command, "/testbed", f.ws)
		v, err := e.Explain(context.Background(), &authz.Request{Mode: mode, Tool: "terminal_operations", Operation: "run_command",
			Effect: tools.Effect{Command: line, Risk: tools.RiskHigh}, Risk: tools.RiskHigh})
		if err != nil {
			t.Fatal(err)
		}
		switch v.Decision {
		case authz.Ask:
			asks++
		case authz.Deny:
			denies++
		default:
			continue
		}
		k := v.Decision.String() + " " + v.Rule
		byRule[k] = append(byRule[k], fmt.Sprintf("%s: %s", c.Instance, tools.Clip(strings.ReplaceAll(c.Command, "\n", "⏎"), 120)))
	}
	return asks, denies, byRule
}

func logByRule(t *testing.T, byRule map[string][]string) {
	t.Helper()
	keys := make([]string, 0, len(byRule))
	for k := range byRule {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return len(byRule[b]) - len(byRule[a]) })
	for _, k := range keys {
		t.Logf("  %-40s %4d", k, len(byRule[k]))
		for _, c := range byRule[k][:min(3, len(byRule[k]))] {
			t.Logf("      %s", c)
		}
	}
}

// TestAgentCommandsAskRate replays 610 commands a real agent ran
// (mini-swe-agent driving deepseek-chat on SWE-bench; see
// testdata/agentcommands/README.md) through the judge in AUTO, in the
// default configuration where commands run in the sandbox: AUTO may ask
// about at most 15% of them. Before the sandbox held commands, AUTO asked
// about every one. Without a sandbox the judge is the boundary again; the
// rate is logged, and inspecting commands (ls, grep, sed -n, git diff)
// still run without asking.
func TestAgentCommandsAskRate(t *testing.T) {
	cmds := loadAgentCommands(t)
	if len(cmds) < 400 {
		t.Fatalf("%d agent commands, want at least 400", len(cmds))
	}
	f := newFixture(t)
	asks, denies, byRule := askRate(t, f, f.containedEngine(t, nil), authz.ModeAuto, cmds)
	rate := float64(asks+denies) / float64(len(cmds))
	t.Logf("AUTO in the sandbox: %d asked, %d denied of %d agent commands (%.1f%%), by rule:", asks, denies, len(cmds), 100*rate)
	logByRule(t, byRule)
	if rate > 0.15 {
		t.Errorf("AUTO asks about %.1f%% of a real agent's commands, want at most 15%%", 100*rate)
	}

	asks, denies, byRule = askRate(t, f, f.engine(t, nil, nil), authz.ModeAuto, cmds)
	t.Logf("AUTO without a sandbox: %d asked, %d denied of %d (%.1f%%), by rule:", asks, denies, len(cmds), 100*float64(asks+denies)/float64(len(cmds)))
	logByRule(t, byRule)
	if asks+denies == len(cmds) {
		t.Errorf("AUTO without a sandbox asks about every command")
	}
	for _, k := range []string{"ask mode:auto"} {
		for _, c := range byRule[k] {
			if line := c[strings.Index(c, ": ")+2:]; strings.HasPrefix(line, "ls ") || strings.HasPrefix(line, "sed -n") || strings.HasPrefix(line, "grep ") {
				t.Errorf("AUTO without a sandbox asks about an inspecting command: %s", c)
			}
		}
	}
}
