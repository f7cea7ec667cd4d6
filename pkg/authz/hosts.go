package authz

import (
	"github.com/toold/toold/pkg/authz/internal/shellread"
	"strings"
	"unicode"
)

// HostRuleAllows reports whether a policy rule names host explicitly and
// allows it for calls of tool and op: an allow rule with hosts that match
// it, and no deny or ask rule with hosts that match it. Rules that judge a
// call as a whole (no hosts) do not count. The network guard (pkg/netguard)
// asks this before it lets a host reach private or loopback addresses, so
// that only an explicit `hosts:` rule opens the machine's own network to a
// tool; cloud metadata addresses stay refused whatever the rules say.
func (e *Engine) HostRuleAllows(tool, op, host string) bool {
	h := normalizeHost(host)
	if h == "" {
		return false
	}
	allowed := false
	for _, r := range e.rules {
		if r.kind() != kindHost || !r.hostMatches(h) {
			continue
		}
		if len(r.tools) > 0 && !anyGlob(r.tools, tool) || len(r.ops) > 0 && !anyGlob(r.ops, op) {
			continue
		}
		switch r.decision {
		case Allow:
			allowed = allowed || (len(r.args) == 0 && namesHost(r.hosts, h))
		default:
			return false
		}
	}
	return allowed
}

// namesHost reports whether a glob that matches h names something: a rule
// allowing every host ("*", "*.*") does not open private addresses to
// all of them.
func namesHost(gs []*shellread.WordGlob, h string) bool {
	for _, g := range gs {
		if g.Any || !g.Match(h) {
			continue
		}
		if strings.IndexFunc(g.Src, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			return true
		}
	}
	return false
}
