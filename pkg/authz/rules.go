package authz

import (
	"encoding/json"
	"fmt"
	"github.com/toold/toold/pkg/authz/internal/shellread"
	"net"
	"net/url"
	"strings"
)

// ruleKind says what part of a call a rule judges.
type ruleKind int

const (
	kindCall    ruleKind = iota // the call as a whole (tool, operation, args)
	kindCommand                 // each command of its command line
	kindPath                    // each path it touches
	kindHost                    // each host it reaches
)

// access is what a call does to a path.
type access int

const (
	accRead  access = iota + 1 // reads it (Effect.Reads, < file, cat's arguments)
	accWrite                   // writes it (Effect.Writes, > file)
	accArg                     // a command's argument: may be read or written
	accExec                    // runs it (a command named by its path)
	accValue                   // names it in a variable's value
)

func (a access) String() string {
	switch a {
	case accRead:
		return "read"
	case accWrite:
		return "write"
	case accArg:
		return "argument"
	case accExec:
		return "run"
	case accValue:
		return "value"
	}
	return "any"
}

// rule is a compiled rule.
type rule struct {
	name, reason string
	decision     Decision
	tools, ops   []*shellread.WordGlob
	args         map[string]*shellread.WordGlob
	commands     []*shellread.CmdPattern
	piped        bool
	pipedFrom    []*shellread.WordGlob
	paths        []pathPattern
	access       access // 0: any
	hosts        []*shellread.WordGlob
	sensitive    bool
	builtin      bool
	index        int
}

func (r *rule) kind() ruleKind {
	switch {
	case len(r.commands) > 0:
		return kindCommand
	case len(r.paths) > 0:
		return kindPath
	case len(r.hosts) > 0:
		return kindHost
	}
	return kindCall
}

func compileRule(spec RuleSpec, name string, index int) (*rule, error) {
	r := &rule{name: name, reason: spec.Reason, index: index}
	switch strings.ToLower(spec.Decision) {
	case "allow":
		r.decision = Allow
	case "ask":
		r.decision = Ask
	case "deny":
		r.decision = Deny
	case "":
		return nil, fmt.Errorf("decision is required (allow, ask or deny)")
	default:
		return nil, fmt.Errorf("decision %q: want allow, ask or deny", spec.Decision)
	}
	n := 0
	for _, has := range []bool{len(spec.Commands) > 0, len(spec.Paths) > 0, len(spec.Hosts) > 0} {
		if has {
			n++
		}
	}
	if n > 1 {
		return nil, fmt.Errorf("a rule has at most one of commands, paths and hosts; split it")
	}
	globs := func(what string, ss []string) ([]*shellread.WordGlob, error) {
		var out []*shellread.WordGlob
		for _, s := range ss {
			g, err := shellread.CompileWordGlob(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			out = append(out, g)
		}
		return out, nil
	}
	var err error
	if r.tools, err = globs("tool", spec.Tool); err != nil {
		return nil, err
	}
	if r.ops, err = globs("operation", spec.Operation); err != nil {
		return nil, err
	}
	if len(spec.Args) > 0 {
		r.args = map[string]*shellread.WordGlob{}
		for _, k := range sortedKeys(spec.Args) {
			g, err := shellread.CompileWordGlob(spec.Args[k])
			if err != nil {
				return nil, fmt.Errorf("args.%s: %w", k, err)
			}
			r.args[k] = g
		}
	}
	for _, c := range spec.Commands {
		p, err := shellread.CompileCmdPattern(c)
		if err != nil {
			return nil, err
		}
		r.commands = append(r.commands, p)
	}
	if (spec.Piped || len(spec.PipedFrom) > 0) && len(spec.Commands) == 0 {
		return nil, fmt.Errorf("piped and piped_from need commands")
	}
	r.piped = spec.Piped || len(spec.PipedFrom) > 0
	if r.pipedFrom, err = globs("piped_from", spec.PipedFrom); err != nil {
		return nil, err
	}
	for _, s := range spec.Paths {
		pp, err := compilePathPattern(s)
		if err != nil {
			return nil, err
		}
		if pp.negate {
			return nil, fmt.Errorf("path %q: ! is only for sensitive paths; write a separate rule", s)
		}
		r.paths = append(r.paths, pp)
	}
	switch strings.ToLower(spec.Access) {
	case "", "any":
	case "read":
		r.access = accRead
	case "write":
		r.access = accWrite
	default:
		return nil, fmt.Errorf("access %q: want read, write or any", spec.Access)
	}
	if spec.Access != "" && len(spec.Paths) == 0 {
		return nil, fmt.Errorf("access needs paths")
	}
	if r.hosts, err = globs("hosts", spec.Hosts); err != nil {
		return nil, err
	}
	for i, h := range r.hosts {
		if g, err := shellread.CompileWordGlob(strings.ToLower(h.Src)); err == nil {
			r.hosts[i] = g
		}
	}
	if spec.Sensitive {
		if r.decision != Allow || len(r.paths) == 0 {
			return nil, fmt.Errorf("sensitive: true is only for allow rules with paths")
		}
		r.sensitive = true
	}
	return r, nil
}

// callMatches reports whether the tool, operation and arguments match.
func (r *rule) callMatches(tool, op string, args map[string]any) bool {
	if len(r.tools) > 0 && !anyGlob(r.tools, tool) {
		return false
	}
	if len(r.ops) > 0 && !anyGlob(r.ops, op) {
		return false
	}
	for k, g := range r.args {
		v, ok := args[k]
		if !ok || !g.Match(argString(v)) {
			return false
		}
	}
	return true
}

func anyGlob(gs []*shellread.WordGlob, s string) bool {
	for _, g := range gs {
		if g.Match(s) {
			return true
		}
	}
	return false
}

// argString renders an argument value for matching: strings as they are,
// everything else as JSON.
func argString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// commandMatches reports whether the rule matches command c. Deny and ask
// rules match any layer (so "sudo" itself can be denied, and "rm -rf /"
// through sudo); allow rules match only the command that runs, by a
// system path or its bare name.
func (r *rule) commandMatches(c *shellread.Command, home string) bool {
	if !r.pipeMatches(c) {
		return false
	}
	if r.decision == Allow {
		if c.WrapperOnly || len(c.Args()) == 0 {
			return false
		}
		for _, p := range r.commands {
			if p.Match(c.Args(), true, home) {
				return true
			}
		}
		return false
	}
	for _, l := range c.Layers {
		for _, p := range r.commands {
			if p.Match(l, false, home) {
				return true
			}
		}
	}
	return false
}

// pipeMatches reports whether c reads a pipe as the rule's piped and
// piped_from require.
func (r *rule) pipeMatches(c *shellread.Command) bool {
	if r.piped && !c.Piped {
		return false
	}
	if len(r.pipedFrom) == 0 {
		return true
	}
	for _, n := range c.PipedFrom {
		if anyGlob(r.pipedFrom, n) {
			return true
		}
	}
	return false
}

// matchLine reports whether the rule matches a command line: a deny or ask
// rule when it matches one of its commands, an allow rule when it matches
// every command that runs.
func (r *rule) matchLine(cmds []*shellread.Command, home string) bool {
	judged := 0
	for _, c := range cmds {
		if r.decision != Allow {
			if r.commandMatches(c, home) {
				return true
			}
			continue
		}
		if c.WrapperOnly || len(c.Args()) == 0 {
			continue
		}
		judged++
		if !r.commandMatches(c, home) {
			return false
		}
	}
	return judged > 0
}

// accessMatches reports whether a rule's access covers acc. An argument of
// a command may be read or written: read rules that deny or ask see it,
// read rules that allow do not.
func (r *rule) accessMatches(acc access) bool {
	switch r.access {
	case accRead:
		return acc == accRead || acc == accExec || acc == accValue || (acc == accArg && r.decision != Allow)
	case accWrite:
		return acc == accWrite || acc == accArg
	}
	return true
}

// pathMatches reports whether any of the forms of a path (absolute, clean)
// matches.
func (r *rule) pathMatches(forms []string, acc access, sc pathScope) bool {
	if !r.accessMatches(acc) {
		return false
	}
	for _, f := range forms {
		for _, pp := range r.paths {
			if pp.match(f, sc) {
				return true
			}
		}
	}
	return false
}

func (r *rule) hostMatches(h string) bool { return anyGlob(r.hosts, h) }

// normalizeHost lowercases a host and drops a scheme, port, brackets and a
// trailing dot.
func normalizeHost(h string) string {
	h = strings.TrimSpace(h)
	if strings.Contains(h, "://") {
		if u, err := url.Parse(h); err == nil {
			h = u.Host
		}
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	if ip, ok := canonicalIP(h); ok {
		return ip
	}
	return strings.ToLower(h)
}

// urlHost returns the host of a word that is a URL (scheme://host...).
func urlHost(s string) (string, bool) {
	i := strings.Index(s, "://")
	if i <= 0 {
		return "", false
	}
	for _, r := range s[:i] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return "", false
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", false
	}
	return normalizeHost(u.Host), true
}

// isPathLike reports whether a word looks like a path: it has a /, or
// starts with ~ or ., or is "..".
func isPathLike(s string) bool {
	return strings.Contains(s, "/") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, ".")
}
