package authz

// Deciding each facet of a call: the rules that match it, the checks toold
// always makes, the approval mode, and grants.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/toold/toold/pkg/authz/internal/shellread"
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
		if j.relaxed {
			f.neutral = true
			j.set(f, Allow, ruleCommandArg, fmt.Sprintf("%q cannot be resolved now (%v); the sandbox holds wherever it leads when the command runs", f.given, f.resolveErr), tools.RiskLow)
			return
		}
		if errors.Is(f.resolveErr, syscall.ELOOP) {
			// A loop of symbolic links leads nowhere: the call could only
			// fail, so nobody is asked about it.
			j.set(f, Deny, ruleInvalidPath, fmt.Sprintf("%q cannot be used: %v", f.given, f.resolveErr), tools.RiskHigh)
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
		if (f.cmd >= 0 && f.acc != accWrite) || f.workdir || j.relaxed {
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
		case j.relaxed:
			f.neutral = true
			j.set(f, Allow, ruleCommandArg, j.subject(f)+" is read outside the workspace, where the sandbox hides every secret", tools.RiskLow)
		case j.mode == ModeAuto && e.readRoot(f.loc.Abs):
			j.set(f, Allow, ruleReadRoot, j.subject(f)+" is under a read root, readable in AUTO mode", risk)
		default:
			j.byMode(f, risk, "it reads outside the workspace")
		}
	default:
		if j.contained && (j.contain.writable(f.loc.Abs) || f.workdir || j.mode == ModeYOLO) {
			// The kernel refuses the write, or allows it in a writable
			// directory: no person needs to decide, and the decision opens
			// nothing (Verdict.Outside leaves it out).
			f.neutral, f.sandboxed = true, true
			why := " is outside the workspace: the sandbox refuses writes there (YOLO runs the command in it)"
			switch {
			case j.contain.writable(f.loc.Abs):
				why = " is in a directory the sandbox lets commands write"
			case f.workdir:
				why = " is where the command runs, outside the workspace: the sandbox refuses its writes there"
			}
			j.set(f, Allow, ruleCommandArg, j.subject(f)+why, tools.RiskLow)
			return
		}
		what := "the call writes " + f.loc.Abs
		switch {
		case f.workdir:
			what = "the command runs in " + f.loc.Abs
		case f.cmd >= 0 && f.acc == accArg:
			what = "`" + tools.Clip(j.cmds[f.cmd].Src, 80) + "` may write " + f.loc.Abs
		case f.cmd >= 0:
			what = "`" + tools.Clip(j.cmds[f.cmd].Src, 80) + "` writes " + f.loc.Abs
		}
		if j.contained {
			j.set(f, Ask, ruleOutsideWrite, what+", outside the workspace, which the sandbox refuses; "+j.mode.String()+" mode asks a person", tools.RiskHigh)
			return
		}
		j.set(f, Ask, ruleOutsideWrite, what+", outside the workspace; that needs a person's approval in every mode", tools.RiskHigh)
	}
}

// decideCommand decides one command of a command line. In order: a deny
// rule denies (in every mode); what the judge cannot follow asks, unless
// the kernel sandbox contains it (hardProblem); a deny rule that may match
// for values only known at run time asks, except in YOLO inside the
// sandbox; an ask rule asks; an allow rule allows; then the mode: YOLO
// runs it, ASK asks, and AUTO asks only for the dangerous classes
// (classes.yaml, raised privileges) and — outside the sandbox — for a
// command that does more than inspect the workspace.
func (j *judgement) decideCommand(f *facet) {
	c := j.cmds[f.cmd]
	f.grantable = len(c.Problems) == 0 && len(c.Env) == 0 && len(c.Layers) == 1 && len(c.Wrappers) == 0 &&
		!c.WrapperOnly && !c.DynArgs && !c.Privileged && len(j.req.Effect.Env) == 0 && allLiteral(c.Args())
	deny, ask, allow := j.strictest(kindCommand, func(r *rule) bool { return r.commandMatches(c, j.e.home) })
	if deny != nil {
		j.byRule(f, deny, tools.RiskHigh)
		return
	}
	if r := j.runtimeRule(c); r != nil && !(r.decision == Deny && j.contained && j.mode == ModeYOLO) {
		f.hard = true
		j.set(f, Ask, ruleDynamicTarget, j.subject(f)+": "+runtimeReason(r), tools.RiskHigh)
		return
	}
	if p, ok := j.hardProblem(c); ok {
		f.hard = true
		j.set(f, Ask, p.Rule, fmt.Sprintf("%s cannot be judged: %s", j.subject(f), p.Reason), tools.RiskHigh)
		return
	}
	if ask != nil {
		j.byRule(f, ask, tools.RiskHigh)
		return
	}
	if c.Privileged && j.contained && j.mode != ModeYOLO {
		// Inside the sandbox sudo gains nothing (no_new_privs), but asking
		// for it is a class of its own; an allow rule sees only the
		// command sudo runs, so it must not lift this.
		rule, why := j.dangerClass(c)
		j.set(f, Ask, rule, fmt.Sprintf("%s needs approval: %s (%s mode asks before raised privileges)", j.subject(f), why, strings.ToUpper(j.mode.String())), tools.RiskHigh)
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
	switch j.mode {
	case ModeYOLO:
		j.byMode(f, tools.RiskHigh, "")
		return
	case ModeAuto:
		if r, why := j.dangerClass(c); r != "" {
			j.set(f, Ask, r, fmt.Sprintf("%s needs approval: %s (AUTO mode asks before commands of this class)", j.subject(f), why), tools.RiskHigh)
			return
		}
		if j.contained {
			j.set(f, Allow, "mode:auto", j.subject(f)+" shows no danger the judge asks about; it runs in the sandbox (AUTO mode)", tools.RiskMedium)
			return
		}
		if !hasSoft && inspectsOnly(c) {
			j.set(f, Allow, "mode:auto", j.subject(f)+" only inspects files (AUTO mode)", tools.RiskLow)
			return
		}
	}
	rule := "mode:" + j.mode.String()
	why := "no rule allows it"
	if hasSoft {
		rule, why = soft.Rule, soft.Reason
		if allow != nil {
			why += "; so rule " + allow.name + " does not allow it"
		}
	}
	modeWhy := "AUTO mode without a sandbox asks before commands that do more than inspect files, unless a rule allows them"
	if j.mode == ModeAsk {
		modeWhy = "ASK mode asks before anything a rule does not allow"
	}
	j.set(f, Ask, rule, fmt.Sprintf("%s needs approval: %s (%s)", j.subject(f), why, modeWhy), tools.RiskHigh)
}

// hardProblem returns the first problem of c that asks in every mode: any
// hard problem when the command is not contained (or in ASK mode); inside
// the sandbox only one whose effect outlives the sandbox (Problem.Lasting).
func (j *judgement) hardProblem(c *shellread.Command) (shellread.Problem, bool) {
	for _, p := range c.Problems {
		if p.Hard && (!j.relaxed || p.Lasting) {
			return p, true
		}
	}
	return shellread.Problem{}, false
}

// dangerClass returns the dangerous class of c that AUTO asks about (a
// rule name of classes.yaml, or raised privileges) and why; "" when none.
// A class that matches for some value only known at run time counts.
func (j *judgement) dangerClass(c *shellread.Command) (rule, why string) {
	if c.Privileged {
		return shellread.RulePrivileged, "it runs with raised privileges (" + strings.Join(c.Wrappers, ", ") + ")"
	}
	for _, r := range dangerClasses() {
		if r.commandMatches(c, j.e.home) {
			return r.name, r.reason
		}
	}
	for _, r := range dangerClasses() {
		if r.mayMatchCommand(c, j.e.home) {
			return r.name, r.reason + " — for some value it takes only when it runs"
		}
	}
	return "", ""
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

// inspectors are programs that only read what they are given, beyond those
// whose path arguments shellread knows to be read-only; with the git
// subcommands below they are what AUTO runs without a sandbox.
var inspectors = []string{"sed", "awk", "nl", "tr", "uniq", "xxd", "id", "whoami", "uname", "date",
	"hostname", "true", "false", "sleep", "seq", "expr", "tee", "cd", "pushd", "popd", "dirs", "type", "command"}

// gitInspect are git subcommands that only read the repository.
var gitInspect = []string{"status", "diff", "log", "show", "blame", "ls-files", "ls-tree", "rev-parse", "describe",
	"grep", "shortlog", "cat-file", "rev-list", "branch", "tag", "remote", "config", "stash", "reflog", "version", "help"}

// inspectsOnly reports whether c only inspects files: a program whose
// path arguments are only read (cat, ls, grep, find without -exec...), an
// inspector above, or git reading its repository. Its redirections and the
// paths it names are judged on their own (a write asks without a sandbox).
// shellread's checks have already added a problem for the options that make
// these programs run others (sed's e command, awk's system(), git's -c).
func inspectsOnly(c *shellread.Command) bool {
	if c.WrapperOnly || len(c.Args()) == 0 || len(c.Layers) > 1 || c.DynArgs {
		return false
	}
	if a := c.Args()[0]; !a.Literal || (strings.Contains(a.Text, "/") && !shellread.InSystemBin(a.Text)) {
		return false
	}
	name := c.Name()
	switch {
	case shellread.ReadOnlyArgs(c):
		return true
	case name == "sed":
		// sed -i writes the files it is given.
		for _, w := range c.Args()[1:] {
			if t := w.Text; t == "--in-place" || strings.HasPrefix(t, "--in-place=") || (strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--") && strings.Contains(t, "i")) {
				return false
			}
		}
		return true
	case name == "tee":
		return len(c.Args()) == 1
	case name == "git":
		sh := shellread.ShapeOf(c.Args())
		if len(sh.Pos) == 0 || !sh.Pos[0].Literal || !slices.Contains(gitInspect, sh.Pos[0].Text) {
			return false
		}
		switch sh.Pos[0].Text {
		case "branch", "tag", "remote", "stash", "config":
			// Listing only: no further words.
			return len(sh.Pos) == 1 || (sh.Pos[0].Text == "stash" && sh.Pos[1].Text == "list") ||
				(sh.Pos[0].Text == "config" && sh.HasFlag([]string{"--get", "--get-all", "--list", "-l", "--get-regexp"}, false))
		}
		return true
	}
	return slices.Contains(inspectors, name)
}
