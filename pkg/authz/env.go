package authz

import (
	"fmt"
	"github.com/toold/toold/pkg/authz/internal/shellread"
	"slices"
	"strings"

	"github.com/toold/toold/pkg/tools"
)

// Environment variables are part of what a command runs: BASH_ENV makes bash
// run a file before the command, GIT_CONFIG_* give git a core.fsmonitor, and
// LD_PRELOAD loads code into every program. A call's env (Effect.Env) and the
// assignments written in a command line are judged here.

// ruleEnv names the decisions on a call's environment variables.
const ruleEnv = "builtin:environment"

// envFacets adds one facet per variable of the call's environment, in name
// order.
func (j *judgement) envFacets(env map[string]string) {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		j.add(&facet{kind: facetEnv, given: k + "=" + env[k], cmd: -1})
	}
}

// decideEnv judges one variable of the call's environment. A variable that
// makes programs run code asks in every mode and no grant covers it; one
// known to be harmless is allowed with the command; any other is decided by
// the mode as a command nobody allowed (it may change what the program does).
func (j *judgement) decideEnv(f *facet) {
	name, _, _ := strings.Cut(f.given, "=")
	switch {
	case j.relaxed:
		// The programs it changes run in the sandbox.
		f.neutral = true
		j.set(f, Allow, ruleEnv, fmt.Sprintf("the call sets %s for a command that runs in the sandbox", tools.Clip(f.given, 80)), tools.RiskLow)
	case shellread.CodeEnv(name):
		f.hard = true
		j.set(f, Ask, shellread.RuleDangerousEnv, fmt.Sprintf("the call sets %s, which can make the shell, the dynamic loader, git or an interpreter run other code; that needs a person's approval for each call, in every mode", tools.Clip(f.given, 80)), tools.RiskHigh)
	case shellread.BenignEnv(name):
		f.neutral = true
		j.set(f, Allow, ruleEnv, fmt.Sprintf("the call sets %s, which changes nothing that runs", tools.Clip(f.given, 80)), tools.RiskLow)
	default:
		j.byMode(f, tools.RiskHigh, "it sets the environment variable "+name+", which the programs it runs may read")
	}
}
