package authz

// Wording: the verdict for the model and for people, the parsed commands
// shown in approvals, and the scopes a person may grant.

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toold/toold/pkg/authz/internal/shellread"
	"github.com/toold/toold/pkg/tools"
)

// subject names a part of the call for reasons.
func (j *judgement) subject(f *facet) string {
	switch f.kind {
	case facetPath:
		s := fmt.Sprintf("%q", f.given)
		if f.loc.Abs != "" && f.loc.Abs != f.given {
			s += " (" + f.loc.Abs + ")"
		}
		return s
	case facetCommand:
		if f.cmd >= 0 {
			return "`" + tools.Clip(j.cmds[f.cmd].Src, 80) + "`"
		}
		return "the command line"
	case facetHost:
		return "host " + f.host
	case facetEnv:
		return "the environment variable " + tools.Clip(f.given, 60)
	}
	return j.req.Tool + "." + j.req.Operation
}

func (j *judgement) verdict() Verdict {
	v := Verdict{Decision: Allow, Risk: tools.RiskLow}
	for _, f := range j.facets {
		v.Decision = max(v.Decision, f.decision)
		v.Risk = max(v.Risk, f.risk)
	}
	d := j.deciding(j.facets, v.Decision)
	v.Rule, v.Reason = d.rule, d.reason
	if v.Decision == Ask {
		var reasons []string
		for _, f := range j.facets {
			if f.decision == Ask && !slices.Contains(reasons, f.reason) && len(reasons) < 3 {
				reasons = append(reasons, f.reason)
			}
		}
		v.Reason = strings.Join(reasons, "; ")
	}
	for _, f := range j.facets {
		if f.grant != nil {
			v.Grant = f.grant
			break
		}
	}
	v.Commands = j.parsedCommands()
	v.Summary = j.summary()
	if v.Decision != Deny {
		v.Outside = j.outside()
		v.Judged = j.judged()
	}
	if v.Decision == Ask {
		v.Scopes = j.scopes()
	}
	return v
}

// deciding picks the facet that names a decision: for deny the first
// denied; for ask the first asked by a rule or a check rather than by the
// mode; for allow the first allowed by a grant, then by a policy rule, then
// any that is not neutral.
func (j *judgement) deciding(fs []*facet, d Decision) *facet {
	switch d {
	case Deny:
		for _, f := range fs {
			if f.decision == d {
				return f
			}
		}
	case Ask:
		for _, f := range fs {
			if f.decision == d && !strings.HasPrefix(f.rule, "mode:") {
				return f
			}
		}
		for _, f := range fs {
			if f.decision == d {
				return f
			}
		}
	}
	for _, pick := range []func(*facet) bool{
		func(f *facet) bool { return f.grant != nil },
		func(f *facet) bool { return f.byRule },
		func(f *facet) bool { return !f.neutral },
		func(*facet) bool { return true },
	} {
		for _, f := range fs {
			if f.decision == d && pick(f) {
				return f
			}
		}
	}
	return &facet{rule: "mode:" + j.mode.String(), reason: "nothing to judge"}
}

func (j *judgement) parsedCommands() []ParsedCommand {
	if len(j.cmds) == 0 {
		return nil
	}
	out := make([]ParsedCommand, 0, len(j.cmds))
	for i, c := range j.cmds {
		pc := ParsedCommand{Wrappers: c.Wrappers}
		for _, w := range c.Args() {
			pc.Args = append(pc.Args, w.String())
		}
		for _, r := range c.Redirects {
			pc.Redirects = append(pc.Redirects, r.Src)
		}
		for _, a := range c.Env {
			pc.Env = append(pc.Env, a.Src)
		}
		var fs []*facet
		d := Allow
		for _, f := range j.facets {
			if f.cmd == i {
				fs = append(fs, f)
				d = max(d, f.decision)
			}
		}
		df := j.deciding(fs, d)
		pc.Decision, pc.Rule, pc.Reason = d.String(), df.rule, df.reason
		out = append(out, pc)
	}
	return out
}

// outside lists the resolved paths outside the workspace the call touches.
func (j *judgement) outside() []string {
	var out []string
	for _, f := range j.facets {
		if f.kind == facetPath && f.resolveErr == nil && !f.loc.Inside && f.loc.Abs != "" && f.acc != accValue && !f.sandboxed && !slices.Contains(out, f.loc.Abs) {
			out = append(out, f.loc.Abs)
		}
	}
	return out
}

// judged lists the effect's paths that resolved plainly (facet.plain).
func (j *judgement) judged() []tools.JudgedPath {
	var out []tools.JudgedPath
	for _, f := range j.facets {
		if f.plain {
			out = append(out, tools.JudgedPath{Given: f.given, Abs: f.loc.Abs, Type: f.loc.Type})
		}
	}
	return out
}

func (j *judgement) summary() string {
	var s string
	switch {
	case j.req.Effect.Command != "":
		s = "Run `" + tools.Clip(strings.TrimSpace(j.req.Effect.Command), 100) + "`"
		if n := len(j.cmds); n > 1 {
			s += fmt.Sprintf(" (%d commands)", n)
		}
	case j.req.Effect.Display != "":
		s = j.req.Effect.Display
	default:
		s = "Call " + j.req.Tool
		if j.req.Operation != "" && j.req.Operation != j.req.Tool {
			s += "." + j.req.Operation
		}
	}
	if out := j.outside(); len(out) > 0 {
		more := ""
		if len(out) > 2 {
			more = fmt.Sprintf(" and %d more", len(out)-2)
			out = out[:2]
		}
		s += " — outside the workspace: " + strings.Join(out, ", ") + more
	}
	return s
}

// maxScopes bounds the conversation scopes offered.
const maxScopes = 4

// scopes offers approving this call once, and, for each part that asks
// and may be granted, a conversation grant narrowed to the tool, the
// operation and the part's directory or command prefix.
func (j *judgement) scopes() []Scope {
	tool, op := j.req.Tool, j.req.Operation
	out := []Scope{{ID: "once", Tool: tool, Operation: op, Description: "this call only"}}
	seen := map[string]bool{}
	ttl := j.e.defaultTTL
	for _, f := range j.facets {
		if f.decision != Ask || f.hard || f.kind == facetEnv || len(out) > maxScopes {
			continue
		}
		s := Scope{Conversation: true, Tool: tool, Operation: op, TTL: ttl}
		switch f.kind {
		case facetPath:
			if s.PathPrefix = j.scopeDir(f); s.PathPrefix == "" {
				continue
			}
		case facetCommand:
			// A command grant covers only commands written out in full:
			// offering one for this command would promise what it cannot keep.
			if !f.grantable {
				continue
			}
			if s.CommandPrefix = commandPrefix(f.words); s.CommandPrefix == "" {
				continue
			}
		case facetHost:
			s.Host = f.host
		}
		key := s.PathPrefix + "\x00" + s.CommandPrefix + "\x00" + s.Host
		if seen[key] {
			continue
		}
		seen[key] = true
		s.Description = describeScope(s)
		s.ID = fmt.Sprintf("conversation-%d", len(out))
		out = append(out, s)
	}
	return out
}

// describeScope says in words what a grant of s covers.
func describeScope(s Scope) string {
	target := s.Tool
	if s.Operation != "" && s.Operation != s.Tool {
		target += "." + s.Operation
	}
	var what string
	switch {
	case s.PathPrefix != "":
		what = fmt.Sprintf("%s on paths under %s", target, s.PathPrefix)
	case s.CommandPrefix != "":
		what = fmt.Sprintf("%s running commands that start with %q, written out in full (no variables, substitutions, wrappers or environment)", target, s.CommandPrefix)
	case s.Arguments != "":
		what = fmt.Sprintf("%s with exactly the arguments %s", target, tools.Clip(s.Arguments, 200))
	case s.Host != "":
		what = fmt.Sprintf("%s reaching host %s", target, s.Host)
	default:
		what = "every " + target + " call"
	}
	if !s.Conversation {
		return what + ", once"
	}
	return fmt.Sprintf("%s, in this conversation for %s (deny rules, sensitive paths and what asks in every mode still apply)", what, s.TTL)
}

// scopeDir is the directory a path grant is narrowed to: the path itself
// when it is a directory, else its parent; never / or the home directory.
func (j *judgement) scopeDir(f *facet) string {
	if f.resolveErr != nil || f.loc.Abs == "" {
		return ""
	}
	d := f.loc.Abs
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		d = filepath.Dir(d)
	}
	if d == "/" || d == j.e.home {
		return ""
	}
	return d
}

// subcommandTools are programs whose first argument is a subcommand, so
// that a grant for "git push" does not cover "git reset".
var subcommandTools = []string{
	"git", "go", "npm", "pnpm", "yarn", "bun", "deno", "cargo", "rustup", "docker", "podman", "kubectl",
	"helm", "make", "pip", "pip3", "uv", "poetry", "pdm", "gh", "glab", "terraform", "tofu", "systemctl",
	"apt", "apt-get", "brew", "dotnet", "mvn", "gradle", "gradlew", "bazel", "nix", "conda", "aws",
	"gcloud", "az", "composer", "bundle", "rake", "mix", "stack", "cabal", "dune", "opam", "swift",
	"flutter", "dart", "just", "task", "nx", "turbo", "lerna", "vagrant", "ansible-galaxy", "hg", "svn",
}

// commandPrefix is what a command grant is narrowed to: the command name,
// and for programs with subcommands the subcommand ("git push").
func commandPrefix(words []string) string {
	if len(words) == 0 || words[0] == "" || strings.ContainsAny(words[0], "$`*?[") {
		return ""
	}
	name := words[0]
	if shellread.InSystemBin(name) {
		name = path.Base(name)
	}
	if len(words) > 1 && slices.Contains(subcommandTools, path.Base(name)) && isSubcommand(words[1]) {
		return name + " " + words[1]
	}
	if b := path.Base(name); slices.Contains(shellread.ShellNames, b) || shellread.IsInterpreter(b) {
		// A grant for an interpreter is for the script it was shown
		// running, never for any program it may be given.
		if len(words) < 2 || strings.HasPrefix(words[1], "-") || shellread.StdinFile(words[1]) {
			return ""
		}
		return name + " " + words[1]
	}
	return name
}

// allLiteral reports whether every word is known before the command runs
// and is no glob.
func allLiteral(ws []shellread.Word) bool {
	for _, w := range ws {
		if !w.Literal || w.Glob {
			return false
		}
	}
	return true
}

// argsKey is the canonical JSON of a call's arguments, which a grant bound
// to one exact call compares.
func argsKey(args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return ""
	}
	return string(b)
}

func isSubcommand(s string) bool {
	if s == "" || len(s) > 32 || !(s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
