package authz

// Judging a call. A call is taken apart into facets — each path it reads
// or writes, each command of its command line, each host it reaches, each
// variable of its environment — which are judged one by one (decide.go)
// and combined into one verdict, worded for the model and for people
// (verdict.go). Reading the command line is commandline.go; what the judge
// reads from the file system (paths as they resolve now, globs, .git below a
// tree) is fsread.go.

import (
	"fmt"
	"slices"

	"github.com/toold/toold/pkg/authz/internal/shellread"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// Names of the engine's own decisions (Verdict.Rule).
const (
	ruleSensitive    = "builtin:sensitive-path"
	ruleInvalidPath  = "builtin:invalid-path"
	ruleUnresolvable = "builtin:unresolvable-path"
	ruleOutsideWrite = "builtin:outside-write"
	ruleReadRoot     = "builtin:read-root"
	ruleWrapper      = "builtin:wrapper"
	ruleNoCommand    = "builtin:no-command"
	ruleCommandArg   = "builtin:command-argument"
	ruleTooMany      = "builtin:too-many-paths"
)

// maxFacets bounds the parts of one call that are judged.
const maxFacets = 4096

// facetKind says what part of a call a facet is.
type facetKind int

const (
	facetCall    facetKind = iota + 1 // the call as a whole (no paths, commands or hosts)
	facetPath                         // a path it touches
	facetCommand                      // a command of its command line
	facetHost                         // a host it reaches
	facetEnv                          // an environment variable it sets (given is NAME=VALUE)
)

// facet is one part of a call, judged on its own.
type facet struct {
	kind  facetKind
	acc   access
	given string
	// Paths: where it resolves, and the path as written made absolute
	// without resolving symlinks (deny checks look at both).
	loc        workspace.Location
	lexical    string
	resolveErr error
	// cmd is the index of the command the facet belongs to, or -1.
	cmd  int
	host string
	// words are a command facet's words, for grants.
	words []string

	decision     Decision
	rule, reason string
	risk         tools.Risk
	// hard: an ask that no rule lifts and only a grant without prefix
	// covers. neutral: allowed because something else decides (a command's
	// argument inside the workspace is judged with its command). byRule:
	// decided by a policy rule.
	hard, neutral, byRule, preset bool
	// grantable: a command facet that a command grant may cover — the
	// command is exactly its words: every word literal, no problem, no
	// wrapper, no environment set for it or for the call, no arguments
	// added at run time. A grant covers only what its approval showed.
	grantable bool
	// workdir: the directory a command runs in (Effect.Reads and
	// Effect.Writes of a call with a command line).
	workdir bool
	// plain: a path of the effect (not a command's) that exists inside the
	// workspace and resolved through no symlink and no "..": its location
	// is the path as given, made absolute (Verdict.Judged).
	plain bool
	// sandboxed: a path outside the workspace that is allowed because the
	// kernel sandbox decides (it refuses the write, or the directory is
	// writable): the verdict does not list it in Outside.
	sandboxed bool
	grant     *Grant
}

// facetKey is what makes two facets equal (judgement.add): a comparable
// value, not a formatted string (which cost a few µs a call and could
// collide on a separator in a path).
type facetKey struct {
	kind                      facetKind
	acc                       access
	cmd, n                    int
	abs, lexical, host, given string
}

// judgement is a call taken apart and judged.
type judgement struct {
	e      *Engine
	req    *Request
	mode   Mode
	base   tools.Risk
	cmds   []*shellread.Command
	facets []*facet
	// seen holds the keys of facets (add): the first ones in keys, in
	// keysBuf, then all in seen.
	seen    map[facetKey]bool
	keys    []facetKey
	keysBuf [4]facetKey
	dirs    []string
	// workdir is the resolved directory the command line runs in, from
	// the call's effect.
	workdir string
	// contained: the call runs a command line, which the kernel sandbox
	// holds (every layer of Engine's Containment is in force). relaxed:
	// contained and not in ASK mode, so the checks that existed only
	// because the judge was the boundary are off (ASK keeps them, as it
	// asks for everything).
	contained, relaxed bool
	// contain is the engine's Containment when the call is judged.
	contain Containment
}

func (e *Engine) decide(req *Request, consume bool) Verdict {
	j := e.judge(req)
	if out, why := j.leavesSandbox(); out {
		// Judged again as it would run: without the sandbox, so the
		// judge is the boundary; no grant covers it (outside.go).
		r := *req
		r.OutsideSandbox = true
		return e.judge(&r).outsideVerdict(why)
	}
	j.applyGrants(consume)
	return j.verdict()
}

func (e *Engine) judge(req *Request) *judgement {
	j := &judgement{e: e, req: req, mode: req.Mode, base: req.Risk}
	j.keys = j.keysBuf[:0]
	if j.mode == ModeUnset {
		j.mode = ModeAuto
	}
	if j.base == tools.RiskUnknown {
		j.base = tools.RiskHigh
	}
	j.contain = *e.contain.Load()
	j.contained = req.Effect.Command != "" && j.contain.Full() && !req.OutsideSandbox
	j.relaxed = j.contained && j.mode != ModeAsk
	if req.Effect.Interactive {
		if keys, ok := shellread.SignalKeysOnly(req.Effect.Command); ok {
			// ^C to a program that runs too long, ^D to end its input:
			// nothing new runs, whatever program reads the terminal.
			f := &facet{kind: facetCall, cmd: -1, preset: true}
			j.byMode(f, tools.RiskLow, "it types "+keys)
			f.reason = fmt.Sprintf("the input only sends %s to the terminal's foreground program (interrupt, end of input, suspend, or discarding the typed line); it runs nothing new — %s", keys, f.reason)
			j.facets = append(j.facets, f)
			return j
		}
	}
	// A tool that runs a command line names the directory it runs in in
	// Effect.Dir (or, for tools that predate it, in Reads and Writes): that
	// directory is where relative paths start, and is judged as a directory
	// the command may change anything in.
	cmdDir := req.Effect.Command != "" && req.Effect.Dir == ""
	if req.Effect.Command != "" && req.Effect.Dir != "" {
		j.effectPath(req.Effect.Dir, accWrite, true)
	}
	for _, p := range req.Effect.Reads {
		j.effectPath(p, accRead, cmdDir)
	}
	for _, p := range req.Effect.Writes {
		j.effectPath(p, accWrite, cmdDir)
	}
	if req.Effect.Command != "" {
		j.commandLine(req.Effect.Command)
	}
	if req.Effect.Unknown != "" && !j.relaxed {
		j.add(&facet{kind: facetCommand, cmd: -1, given: req.Effect.Command, preset: true, hard: true, decision: Ask,
			rule: shellread.RuleUnparseable, risk: tools.RiskHigh, reason: "what runs cannot be judged: " + req.Effect.Unknown})
	}
	j.envFacets(req.Effect.Env)
	for _, h := range req.Effect.Hosts {
		j.addHost(h, -1)
	}
	if len(j.facets) == 0 {
		j.facets = append(j.facets, &facet{kind: facetCall, cmd: -1})
	}
	if len(j.facets) > maxFacets {
		j.facets = append(j.facets[:maxFacets], &facet{kind: facetCall, cmd: -1, preset: true, hard: true,
			decision: Ask, rule: ruleTooMany, risk: tools.RiskHigh,
			reason: fmt.Sprintf("the call touches more than %d paths, too many to judge one by one", maxFacets)})
	}
	for _, f := range j.facets {
		if !f.preset {
			j.decideFacet(f)
		}
	}
	return j
}

// add records f unless an equal facet is recorded.
func (j *judgement) add(f *facet) {
	key := facetKey{kind: f.kind, acc: f.acc, cmd: f.cmd, abs: f.loc.Abs, lexical: f.lexical, host: f.host, given: f.given}
	if f.kind == facetCommand {
		key = facetKey{kind: f.kind, cmd: f.cmd, n: len(j.facets)} // every command is its own
	}
	if len(j.facets) > maxFacets {
		return
	}
	if j.seen == nil {
		// A few facets (a file tool's paths) are compared in place; a map
		// (a large allocation for this key) only for more.
		if slices.Contains(j.keys, key) {
			return
		}
		if len(j.keys) < cap(j.keysBuf) {
			j.keys = append(j.keys, key)
			j.facets = append(j.facets, f)
			return
		}
		j.seen = make(map[facetKey]bool, 2*len(j.keys))
		for _, k := range j.keys {
			j.seen[k] = true
		}
		j.keys = nil
	}
	if j.seen[key] {
		return
	}
	j.seen[key] = true
	j.facets = append(j.facets, f)
}
