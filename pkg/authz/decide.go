package authz

// Deciding each facet of a call: the rules that match it, the checks toold
// always makes, the approval mode, and grants.

import (
	"errors"
	"fmt"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

func (j *judgement) decideFacet(f *facet) {
	switch f.kind {
	case facetPath:
		j.decidePath(f)
	case facetCommand:
		j.decideCommand(f)
	case facetHost:
		j.decideHost(f)
	case facetEnv:
		j.decideEnv(f)
	default:
		j.decideCall(f)
	}
}

// strictest returns, for each decision, the first matching rule among the
// rules of kind (for which match is asked) and the rules that judge the
// call as a whole, which match every part of a call they match. A rule of
// the kind is preferred to a rule on the whole call: it names the part.
func (j *judgement) strictest(kind ruleKind, match func(*rule) bool) (deny, ask, allow *rule) {
	var found, general [Deny + 1]*rule
	for _, r := range j.e.rules {
		if !r.callMatches(j.req.Tool, j.req.Operation, j.req.Args) {
			continue
		}
		switch k := r.kind(); {
		case k == kindCall:
			if general[r.decision] == nil {
				general[r.decision] = r
			}
		case k == kind && found[r.decision] == nil && match(r):
			found[r.decision] = r
		}
	}
	pick := func(d Decision) *rule {
		if found[d] != nil {
			return found[d]
		}
		return general[d]
	}
	return pick(Deny), pick(Ask), pick(Allow)
}

// sensitiveAllow returns the first allow rule with sensitive: true that
// names abs.
func (j *judgement) sensitiveAllow(abs string, acc access) *rule {
	for _, r := range j.e.rules {
		if r.decision == Allow && r.sensitive && r.callMatches(j.req.Tool, j.req.Operation, j.req.Args) &&
			r.pathMatches([]string{abs}, acc, j.e.scope) {
			return r
		}
	}
	return nil
}

func (j *judgement) byRule(f *facet, r *rule, risk tools.Risk) {
	f.decision, f.rule, f.risk, f.byRule = r.decision, r.name, risk, true
	why := r.reason
	if why == "" {
		why = "rule " + r.name
	}
	switch r.decision {
	case Allow:
		f.reason = j.subject(f) + " is allowed: " + why
	case Ask:
		f.reason = j.subject(f) + " needs approval: " + why
	default:
		f.reason = j.subject(f) + " is denied: " + why
	}
}

func (j *judgement) set(f *facet, d Decision, rule, reason string, risk tools.Risk) {
	f.decision, f.rule, f.reason, f.risk = d, rule, reason, risk
}

// byMode lets the approval mode decide a part of the given risk.
func (j *judgement) byMode(f *facet, risk tools.Risk, why string) {
	rule := "mode:" + j.mode.String()
	switch j.mode {
	case ModeYOLO:
		j.set(f, Allow, rule, j.subject(f)+" is allowed in YOLO mode", risk)
	case ModeAuto:
		if risk <= tools.RiskLow {
			j.set(f, Allow, rule, j.subject(f)+" is low risk, allowed in AUTO mode", risk)
			return
		}
		j.set(f, Ask, rule, fmt.Sprintf("%s is %s risk (%s); AUTO mode asks", j.subject(f), risk, why), risk)
	default:
		j.set(f, Ask, rule, fmt.Sprintf("%s: ASK mode asks before anything a rule does not allow (%s)", j.subject(f), why), risk)
	}
}

func (j *judgement) decidePath(f *facet) {
	e := j.e
	if f.resolveErr != nil {
		if errors.Is(f.resolveErr, errdefs.ErrInvalidArgument) {
			j.set(f, Deny, ruleInvalidPath, fmt.Sprintf("%q is not a valid path: %v", f.given, f.resolveErr), tools.RiskHigh)
			return
		}
		f.hard = true
		j.set(f, Ask, ruleUnresolvable, fmt.Sprintf("%q cannot be resolved, so where it leads cannot be judged (%v)", f.given, f.resolveErr), tools.RiskHigh)
		return
	}
	forms := []string{f.loc.Abs}
	if f.lexical != "" && f.lexical != f.loc.Abs {
		forms = append(forms, f.lexical)
	}
	sens := ""
	for _, p := range forms {
		if pat, ok := e.sensitive.Match(p); ok {
			sens = pat
			break
		}
	}
	deny, ask, allow := j.strictest(kindPath, func(r *rule) bool {
		if r.decision == Allow {
			// What the kernel will touch must be allowed.
			return r.pathMatches(forms[:1], f.acc, e.scope)
		}
		return r.pathMatches(forms, f.acc, e.scope)
	})
	outside := !f.loc.Inside
	risk := tools.RiskLow
	switch {
	case outside && f.acc != accValue:
		risk = tools.RiskHigh
	case f.acc == accWrite:
		risk = tools.RiskMedium
	}
	if f.cmd < 0 && !f.workdir {
		risk = max(risk, j.base)
	}
	if deny != nil {
		j.byRule(f, deny, risk)
		return
	}
	if sens != "" {
		sa := j.sensitiveAllow(f.loc.Abs, f.acc)
		if sa == nil {
			j.set(f, Deny, ruleSensitive, fmt.Sprintf("%s is a sensitive path (it matches %q); toold never lets a call read or write it (a policy rule with sensitive: true can allow it)", j.subject(f), sens), tools.RiskHigh)
			return
		}
		if ask == nil {
			allow = sa
		}
	}
	if ask != nil {
		j.byRule(f, ask, risk)
		return
	}
	if allow != nil && (!outside || allow.kind() == kindPath) {
		j.byRule(f, allow, risk)
		return
	}
	if !outside {
		if (f.cmd >= 0 && f.acc != accWrite) || f.workdir {
			f.neutral = true
			j.set(f, Allow, ruleCommandArg, j.subject(f)+" is inside the workspace; its command decides", tools.RiskLow)
			return
		}
		what := "reads inside the workspace"
		if f.acc == accWrite {
			what = "writes inside the workspace"
		}
		j.byMode(f, risk, what)
		return
	}
	switch f.acc {
	case accValue:
		f.neutral = true
		j.set(f, Allow, ruleCommandArg, j.subject(f)+" is only named, not opened", tools.RiskLow)
	case accRead, accExec:
		switch {
		case j.mode == ModeAuto && e.readRoot(f.loc.Abs):
			j.set(f, Allow, ruleReadRoot, j.subject(f)+" is under a read root, readable in AUTO mode", risk)
		default:
			j.byMode(f, risk, "it reads outside the workspace")
		}
	default:
		what := "the call writes " + f.loc.Abs
		switch {
		case f.workdir:
			what = "the command runs in " + f.loc.Abs
		case f.cmd >= 0 && f.acc == accArg:
			what = "`" + tools.Clip(j.cmds[f.cmd].Src, 80) + "` may write " + f.loc.Abs
		case f.cmd >= 0:
			what = "`" + tools.Clip(j.cmds[f.cmd].Src, 80) + "` writes " + f.loc.Abs
		}
		j.set(f, Ask, ruleOutsideWrite, what+", outside the workspace; that needs a person's approval in every mode", tools.RiskHigh)
	}
}

func (j *judgement) decideCommand(f *facet) {
	c := j.cmds[f.cmd]
	f.grantable = len(c.Problems) == 0 && len(c.Env) == 0 && len(c.Layers) == 1 && len(c.Wrappers) == 0 &&
		!c.WrapperOnly && !c.DynArgs && !c.Privileged && len(j.req.Effect.Env) == 0 && allLiteral(c.Args())
	deny, ask, allow := j.strictest(kindCommand, func(r *rule) bool { return r.commandMatches(c, j.e.home) })
	if deny != nil {
		j.byRule(f, deny, tools.RiskHigh)
		return
	}
	if r := j.runtimeRule(c); r != nil {
		f.hard = true
		j.set(f, Ask, ruleDynamicTarget, j.subject(f)+": "+runtimeReason(r), tools.RiskHigh)
		return
	}
	if p, ok := c.HardProblem(); ok {
		f.hard = true
		j.set(f, Ask, p.Rule, fmt.Sprintf("%s cannot be judged: %s", j.subject(f), p.Reason), tools.RiskHigh)
		return
	}
	if ask != nil {
		j.byRule(f, ask, tools.RiskHigh)
		return
	}
	soft, hasSoft := c.SoftProblem()
	if c.WrapperOnly && !hasSoft {
		f.neutral = true
		j.set(f, Allow, ruleWrapper, j.subject(f)+" runs the commands judged after it", tools.RiskLow)
		return
	}
	if len(c.Args()) == 0 {
		if !hasSoft {
			f.neutral = true
			j.set(f, Allow, ruleNoCommand, j.subject(f)+" runs no command", tools.RiskLow)
			return
		}
	} else if allow != nil && !hasSoft {
		j.byRule(f, allow, tools.RiskLow)
		return
	}
	if j.mode == ModeYOLO {
		j.byMode(f, tools.RiskHigh, "")
		return
	}
	rule := "mode:" + j.mode.String()
	why := "no rule allows it"
	if hasSoft {
		rule, why = soft.Rule, soft.Reason
		if allow != nil {
			why += "; so rule " + allow.name + " does not allow it"
		}
	}
	modeWhy := "AUTO mode asks before commands no rule allows"
	if j.mode == ModeAsk {
		modeWhy = "ASK mode asks before anything a rule does not allow"
	}
	j.set(f, Ask, rule, fmt.Sprintf("%s needs approval: %s (%s)", j.subject(f), why, modeWhy), tools.RiskHigh)
}

func (j *judgement) decideHost(f *facet) {
	deny, ask, allow := j.strictest(kindHost, func(r *rule) bool { return r.hostMatches(f.host) })
	risk := j.base
	if f.cmd >= 0 {
		risk = tools.RiskLow
	}
	switch {
	case deny != nil:
		j.byRule(f, deny, tools.RiskHigh)
	case ask != nil:
		j.byRule(f, ask, risk)
	case allow != nil:
		j.byRule(f, allow, risk)
	case f.cmd >= 0:
		f.neutral = true
		j.set(f, Allow, ruleCommandArg, j.subject(f)+" is reached by a command; the command decides", tools.RiskLow)
	default:
		j.byMode(f, risk, "it reaches the network")
	}
}

func (j *judgement) decideCall(f *facet) {
	deny, ask, allow := j.strictest(kindCall, func(*rule) bool { return false })
	switch {
	case deny != nil:
		j.byRule(f, deny, j.base)
	case ask != nil:
		j.byRule(f, ask, j.base)
	case allow != nil:
		j.byRule(f, allow, j.base)
	default:
		j.byMode(f, j.base, "the tool's risk")
	}
}

// applyGrants turns the asks of a call into allows when live grants of the
// conversation cover every one of them; with consume, one-time grants used
// are removed.
func (j *judgement) applyGrants(consume bool) {
	var asks []*facet
	for _, f := range j.facets {
		switch f.decision {
		case Deny:
			return
		case Ask:
			asks = append(asks, f)
		}
	}
	if len(asks) == 0 {
		return
	}
	args := argsKey(j.req.Args)
	if j.req.Effect.Interactive {
		// Typed input is judged with what earlier input left on the line,
		// which its arguments do not show: no exact-call grant covers it.
		args = "interactive"
	}
	used, ok := j.e.grants.cover(j.req.ConversationID, j.req.Tool, j.req.Operation, args, asks, consume, j.e.now())
	if !ok {
		return
	}
	for i, f := range asks {
		g := used[i]
		f.decision, f.rule, f.grant = Allow, "grant:"+g.ID, &g
		what := g.Scope.Description
		if what == "" {
			what = describeScope(g.Scope)
		}
		f.reason = fmt.Sprintf("%s is allowed by grant %s (%s, granted by %s)", j.subject(f), g.ID, what, g.GrantedBy)
	}
}
