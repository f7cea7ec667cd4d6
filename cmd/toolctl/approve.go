package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
)

// asker answers the questions a call asks its client while it runs: policy
// approvals (RequiresApproval) and questions of a tool (InputRequired).
//
// The call loop calls it from the goroutine that sends on the stream, one
// question at a time, and sends the answer; the call's events wait
// meanwhile. An implementation returns promptly once ctx is done (the user
// pressed Ctrl-C); the loop then cancels the call and ignores the error. An
// error errApprovalExpired makes the loop send nothing (toold ends the call);
// any other error cancels the call, with the error as the reason.
type asker interface {
	// approve decides a RequiresApproval. The returned decision's
	// approval_id is req's.
	approve(ctx context.Context, q askInfo, req *pb.RequiresApproval) (*pb.ApprovalDecision, error)
	// answer returns the text answer to an InputRequired.
	answer(ctx context.Context, q askInfo, req *pb.InputRequired) (string, error)
}

// askInfo says who asks: the call, and the conversation its grants go to.
type askInfo struct {
	callID         string
	conversationID string // from Welcome
	// oneShot: the call's conversation is a throwaway one (toolctl call
	// without --conversation) that no later call can join, so a grant
	// "for this conversation" would be worthless: it is not offered.
	oneShot bool
}

// errApprovalExpired ends an approval prompt whose expires_at has passed;
// toold ends the call with APPROVAL_TIMEOUT on its own.
var errApprovalExpired = errors.New("the approval request expired")

// noTerminalReason is the denial toold passes to the model when toolctl
// had nobody to ask.
const noTerminalReason = "nobody was asked: toolctl has no terminal to ask on and --yes was not given; pass --yes to approve once, or run toolctl interactively in a terminal"

// callAsker answers as the command line says: --yes approves every approval
// once and --answer answers every question, without asking. What is left
// goes to person, the person at the terminal; when there is none (no
// terminal, or --yes, which makes toolctl non-interactive) approvals are
// denied with noTerminalReason and questions cancel the call.
type callAsker struct {
	yes        bool
	answerText string
	hasAnswer  bool
	// person asks at the terminal; nil when nobody can be asked.
	person asker
	// noPerson says why person is nil although toolctl runs in a
	// terminal: the terminal could not be opened.
	noPerson error
	// show writes one message for the person, on stderr.
	show func(msg string)
}

var _ asker = (*callAsker)(nil)

func (c *callAsker) approve(ctx context.Context, q askInfo, req *pb.RequiresApproval) (*pb.ApprovalDecision, error) {
	switch {
	case c.yes && outsideSandbox(req):
		// Running outside the sandbox is a person's decision, seen.
		if c.person != nil {
			return c.person.approve(ctx, q, req)
		}
		c.show(approvalText(req, style{}, time.Now()) + "denied: --yes never approves running a command outside the sandbox; run toolctl interactively to decide")
		return &pb.ApprovalDecision{ApprovalId: req.GetApprovalId(), Approve: false, Reason: "toolctl --yes does not approve running a command outside the sandbox; nobody was asked"}, nil
	case c.yes:
		once := onceScope(req.GetScopes())
		c.show(approvalText(req, style{}, time.Now()) + "approved once (--yes)")
		return &pb.ApprovalDecision{ApprovalId: req.GetApprovalId(), Approve: true, ScopeId: once.GetScopeId()}, nil
	case c.person != nil:
		return c.person.approve(ctx, q, req)
	}
	c.show(approvalText(req, style{}, time.Now()) + "denied: " + c.noTerminal() + "; pass --yes to approve once, or run toolctl interactively")
	return &pb.ApprovalDecision{ApprovalId: req.GetApprovalId(), Approve: false, Reason: noTerminalReason}, nil
}

func (c *callAsker) answer(ctx context.Context, q askInfo, req *pb.InputRequired) (string, error) {
	switch {
	case c.hasAnswer:
		c.show(questionText(req, style{}) + "answered (--answer): " + c.answerText)
		return c.answerText, nil
	case c.person != nil:
		return c.person.answer(ctx, q, req)
	}
	c.show(strings.TrimSuffix(questionText(req, style{}), "\n"))
	if c.yes {
		return "", errors.New("--yes answers no questions; pass --answer TEXT")
	}
	return "", errors.New(c.noTerminal() + "; pass --answer TEXT, or run toolctl interactively")
}

// noTerminal says why nobody is asked.
func (c *callAsker) noTerminal() string {
	if c.noPerson != nil {
		return fmt.Sprintf("cannot ask on the terminal (%v)", c.noPerson)
	}
	return "no terminal to ask on"
}

// prompter reads a person's answers at a terminal.
type prompter interface {
	// key shows prompt and returns one key press, not echoed. Keys typed
	// before the prompt appeared are discarded: none of them answers.
	key(ctx context.Context, prompt string) (byte, error)
	// line shows prompt and returns the line typed (echoed), without its
	// newline; io.EOF when the person ends the input instead.
	line(ctx context.Context, prompt string) (string, error)
}

// personAsker asks the person at the terminal: it shows the approval or
// question on out (stderr) and reads the answer with in.
type personAsker struct {
	in    prompter
	out   io.Writer
	style style
	now   func() time.Time
}

var _ asker = (*personAsker)(nil)

// approval choices, from the key pressed.
const (
	choiceNone = iota
	choiceOnce
	choiceConversation
	choiceDeny
)

// approvalChoice maps a key to a choice; conversation scopes can be chosen
// only when offered.
func approvalChoice(k byte, offered bool) int {
	switch k {
	case 'y', 'Y':
		return choiceOnce
	case 'a', 'A':
		if offered {
			return choiceConversation
		}
	case 'n', 'N':
		return choiceDeny
	}
	return choiceNone
}

// scopeChoice maps a digit key to one of n scopes; -1 when it names none.
func scopeChoice(k byte, n int) int {
	if k < '1' || k > '9' || int(k-'1') >= n {
		return -1
	}
	return int(k - '1')
}

func (p *personAsker) approve(ctx context.Context, q askInfo, req *pb.RequiresApproval) (*pb.ApprovalDecision, error) {
	if exp := req.GetExpiresAt(); exp != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, exp.AsTime(), errApprovalExpired)
		defer cancel()
	}
	once := onceScope(req.GetScopes())
	convs := conversationScopes(req.GetScopes())
	if outsideSandbox(req) {
		convs = nil // once only (toold offers nothing else)
	}
	st := p.style
	note := ""
	if q.oneShot && len(convs) > 0 {
		convs = nil
		note = "(no [a] for this conversation: it ends with this call; give --conversation ID to keep approvals for later calls)\n"
	}
	_, _ = io.WriteString(p.out, approvalText(req, st, p.now())+offerText(once, convs, st)+note)
	hint := "press y, a or n"
	if len(convs) == 0 {
		hint = "press y or n"
	}
	decision := func(approve bool, scope *pb.ApprovalScope, reason string) *pb.ApprovalDecision {
		return &pb.ApprovalDecision{ApprovalId: req.GetApprovalId(), Approve: approve, ScopeId: scope.GetScopeId(), Reason: reason}
	}
	for {
		k, err := p.in.key(ctx, st.paint(ansiBold, "approve?")+" ")
		if err != nil {
			return nil, p.aborted(ctx, err)
		}
		switch approvalChoice(k, len(convs) > 0) {
		case choiceOnce:
			fmt.Fprintf(p.out, "%c\n%s approved once\n", k, st.paint(ansiGreen, "✓"))
			return decision(true, once, ""), nil
		case choiceConversation:
			fmt.Fprintf(p.out, "%c\n", k)
			s := convs[0]
			if len(convs) > 1 {
				d, err := p.in.key(ctx, fmt.Sprintf("which? [1-%d] ", len(convs)))
				if err != nil {
					return nil, p.aborted(ctx, err)
				}
				i := scopeChoice(d, len(convs))
				if i < 0 {
					fmt.Fprintf(p.out, "\nno such choice; %s\n", hint)
					continue
				}
				fmt.Fprintf(p.out, "%c\n", d)
				s = convs[i]
			}
			conv := "this conversation"
			if q.conversationID != "" {
				conv += " (" + q.conversationID + ")"
			}
			fmt.Fprintf(p.out, "%s approved for %s: %s\n", st.paint(ansiGreen, "✓"), conv, scopeText(s))
			return decision(true, s, ""), nil
		case choiceDeny:
			fmt.Fprintf(p.out, "%c\n", k)
			reason, err := p.in.line(ctx, "reason (optional): ")
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, p.aborted(ctx, err)
			}
			reason = strings.TrimSpace(reason)
			msg := st.paint(ansiRed, "✗") + " denied"
			if reason != "" {
				msg += ": " + reason
			}
			writeLine(p.out, msg)
			return decision(false, nil, reason), nil
		default:
			fmt.Fprintf(p.out, "\n%s\n", hint)
		}
	}
}

func (p *personAsker) answer(ctx context.Context, _ askInfo, req *pb.InputRequired) (string, error) {
	_, _ = io.WriteString(p.out, questionText(req, p.style))
	for {
		s, err := p.in.line(ctx, p.style.paint(ansiBold, "answer:")+" ")
		if err != nil {
			if errors.Is(err, io.EOF) {
				fmt.Fprintln(p.out)
				return "", errors.New("no answer to the question (end of input)")
			}
			return "", p.aborted(ctx, err)
		}
		if s = strings.TrimSpace(s); s != "" {
			return pickChoice(s, req.GetChoices()), nil
		}
		fmt.Fprintln(p.out, "an answer is needed (Ctrl-C cancels the call)")
	}
}

// pickChoice maps an answer that is the number of a choice to that choice.
func pickChoice(s string, choices []string) string {
	for _, c := range choices {
		if c == s {
			return s
		}
	}
	if i, err := strconv.Atoi(s); err == nil && i >= 1 && i <= len(choices) {
		return choices[i-1]
	}
	return s
}

// aborted ends the prompt line after a read that did not return an answer,
// and says why.
func (p *personAsker) aborted(ctx context.Context, err error) error {
	fmt.Fprintln(p.out)
	if errors.Is(context.Cause(ctx), errApprovalExpired) {
		writeLine(p.out, p.style.paint(ansiRed, "✗")+" the approval request expired; toold ends the call")
		return errApprovalExpired
	}
	return err
}

// onceScope is the offered ONCE scope; nil when none is offered (the empty
// scope_id then means once).
func onceScope(scopes []*pb.ApprovalScope) *pb.ApprovalScope {
	for _, s := range scopes {
		if s.GetKind() == pb.ApprovalScope_KIND_ONCE {
			return s
		}
	}
	return nil
}

// conversationScopes are the offered CONVERSATION scopes, in order.
func conversationScopes(scopes []*pb.ApprovalScope) []*pb.ApprovalScope {
	var out []*pb.ApprovalScope
	for _, s := range scopes {
		if s.GetKind() == pb.ApprovalScope_KIND_CONVERSATION {
			out = append(out, s)
		}
	}
	return out
}

// style renders text for people: with ANSI colors when color is set.
type style struct {
	color bool
}

// ANSI SGR codes.
const (
	ansiBold   = "1"
	ansiDim    = "2"
	ansiRed    = "31"
	ansiGreen  = "32"
	ansiYellow = "33"
	ansiCyan   = "36"
)

// paint wraps s in the SGR code when colors are on.
func (st style) paint(code, s string) string {
	if !st.color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// risk colors a risk level by how much harm it means.
func (st style) risk(r pb.RiskLevel) string {
	name := riskName(r) + " risk"
	switch r {
	case pb.RiskLevel_RISK_LEVEL_LOW:
		return st.paint(ansiGreen, name)
	case pb.RiskLevel_RISK_LEVEL_MEDIUM:
		return st.paint(ansiYellow, name)
	}
	return st.paint(ansiRed, name)
}

// decision colors a decision word: allow, ask, deny.
func (st style) decision(d string) string {
	switch d {
	case "allow":
		return st.paint(ansiGreen, d)
	case "ask":
		return st.paint(ansiYellow, d)
	case "deny":
		return st.paint(ansiRed, d)
	}
	return d
}

// maxDiffLines caps the diff shown with an approval; the rest is counted.
const maxDiffLines = 40

// labelWidth aligns the values of labelled lines ("command:  ").
const labelWidth = 10

// approvalText says what an approval request is about, one labelled line
// each, ending in a newline: risk and summary, reason and rule, expiry, and
// the effect (command and sub-commands, paths, hosts, the diff).
func approvalText(req *pb.RequiresApproval, st style, now time.Time) string {
	var b strings.Builder
	e := req.GetEffect()
	if outsideSandbox(req) {
		fmt.Fprintf(&b, "%s (%s)", st.paint(ansiBold+";"+ansiRed, "approval needed to run OUTSIDE the sandbox"), st.risk(req.GetRisk()))
	} else {
		fmt.Fprintf(&b, "%s (%s)", st.paint(ansiBold+";"+ansiYellow, "approval needed"), st.risk(req.GetRisk()))
	}
	if s := e.GetSummary(); s != "" {
		b.WriteString(": " + st.paint(ansiBold, s))
	}
	b.WriteByte('\n')
	field := fieldWriter(&b, "  ")
	switch reason, rule := req.GetReason(), req.GetRule(); {
	case reason != "" && rule != "":
		field("reason", reason+" "+st.paint(ansiDim, "(rule "+rule+")"))
	case reason != "":
		field("reason", reason)
	case rule != "":
		field("rule", rule)
	}
	writeEffect(&b, e, st, "  ", maxDiffLines)
	if outsideSandbox(req) {
		dir := e.GetWorkingDir()
		if dir == "" {
			dir = "the workspace root"
		}
		env := "toold's minimal command environment"
		if len(e.GetEnv()) > 0 {
			env += " and the env above"
		}
		field("sandbox", st.paint(ansiBold+";"+ansiRed, "OFF for this call only")+": exactly the command above, in "+dir+", with "+env+"; it may write outside the workspace, read what the sandbox hides and reach the network directly")
	}
	if exp := req.GetExpiresAt(); exp != nil {
		t := exp.AsTime()
		field("expires", fmt.Sprintf("%s (in %s)", t.Local().Format("15:04:05"), max(t.Sub(now), 0).Round(time.Second)))
	}
	return b.String()
}

// offerText lists the offered scopes as keys, exactly as toold describes
// them: "[y] once  [a] for this conversation: guarded under src/ for 5m
// [n] deny"; several conversation scopes are listed by number.
func offerText(once *pb.ApprovalScope, convs []*pb.ApprovalScope, st style) string {
	var b strings.Builder
	b.WriteString(st.paint(ansiBold, "[y]") + " once")
	if d := once.GetDescription(); d != "" && d != "this call only" {
		b.WriteString(": " + d)
	}
	switch len(convs) {
	case 0:
	case 1:
		b.WriteString("  " + st.paint(ansiBold, "[a]") + " for this conversation: " + scopeText(convs[0]))
	default:
		b.WriteString("  " + st.paint(ansiBold, "[a]") + " for this conversation (then pick one below)")
	}
	b.WriteString("  " + st.paint(ansiBold, "[n]") + " deny\n")
	if len(convs) > 1 {
		for i, s := range convs {
			fmt.Fprintf(&b, "      %d) %s\n", i+1, scopeText(s))
		}
	}
	return b.String()
}

// questionText shows a tool's question and its choices, ending in a
// newline.
func questionText(req *pb.InputRequired, st style) string {
	var b strings.Builder
	lines := strings.Split(strings.TrimSpace(req.GetPrompt()), "\n")
	b.WriteString(st.paint(ansiBold+";"+ansiCyan, "question:") + " " + lines[0] + "\n")
	for _, l := range lines[1:] {
		b.WriteString("  " + l + "\n")
	}
	for i, c := range req.GetChoices() {
		fmt.Fprintf(&b, "  %d) %s\n", i+1, c)
	}
	if req.GetApproval() {
		hint := "  (a yes or no question"
		if op := req.GetAuthorizeOperation(); op != "" {
			hint += "; yes lets the agent run " + op + " once with exactly " + req.GetAuthorizeArgumentsJson()
		}
		b.WriteString(st.paint(ansiDim, hint+")") + "\n")
	}
	return b.String()
}

// fieldWriter returns a func that writes "indent label:  value\n", values
// aligned, and nothing when value is empty.
func fieldWriter(b *strings.Builder, indent string) func(label, value string) {
	return func(label, value string) {
		if value != "" {
			fmt.Fprintf(b, "%s%-*s%s\n", indent, labelWidth, label+":", value)
		}
	}
}

// writeEffect writes what a call would do: the command and its parsed
// sub-commands with their decisions, the paths it reads and writes, the
// hosts it reaches, and its diff cut after maxDiff lines (0: no diff).
func writeEffect(b *strings.Builder, e *pb.Effect, st style, indent string, maxDiff int) {
	field := fieldWriter(b, indent)
	field("command", e.GetCommand())
	field("in", e.GetWorkingDir())
	if env := e.GetEnv(); len(env) > 0 {
		names := make([]string, 0, len(env))
		for k := range env {
			names = append(names, k)
		}
		slices.Sort(names)
		for i, k := range names {
			names[i] = k + "=" + shellQuote(env[k])
		}
		field("env", strings.Join(names, " "))
	}
	cmds := e.GetCommands()
	if len(cmds) > 0 {
		if e.GetCommand() == "" {
			fmt.Fprintf(b, "%scommands:\n", indent)
		}
		width := 0
		for _, c := range cmds {
			width = max(width, len(shellJoin(c.GetArgs())))
		}
		for _, c := range cmds {
			d := c.GetDecision()
			if d == "" {
				d = "?"
			}
			line := fmt.Sprintf("%s%s%s %-*s", indent, strings.Repeat(" ", labelWidth), st.decision(d)+strings.Repeat(" ", max(5-len(d), 0)), width, shellJoin(c.GetArgs()))
			var extra []string
			if r := c.GetRule(); r != "" {
				extra = append(extra, "rule "+r)
			}
			if env := c.GetEnv(); len(env) > 0 {
				extra = append(extra, "env "+strings.Join(env, " "))
			}
			if w := c.GetWrappers(); len(w) > 0 {
				extra = append(extra, "via "+strings.Join(w, ", "))
			}
			if r := c.GetRedirects(); len(r) > 0 {
				extra = append(extra, "> "+strings.Join(r, ", "))
			}
			if len(extra) > 0 {
				line += "  " + st.paint(ansiDim, strings.Join(extra, " · "))
			}
			b.WriteString(strings.TrimRight(line, " ") + "\n")
		}
	}
	field("reads", strings.Join(e.GetReads(), ", "))
	field("writes", strings.Join(e.GetWrites(), ", "))
	field("hosts", strings.Join(e.GetHosts(), ", "))
	if diff := strings.TrimRight(e.GetDiff(), "\n"); diff != "" && maxDiff > 0 {
		fmt.Fprintf(b, "%sdiff:\n", indent)
		lines := strings.Split(diff, "\n")
		for i, l := range lines {
			if i == maxDiff {
				fmt.Fprintf(b, "%s  %s\n", indent, st.paint(ansiDim, fmt.Sprintf("… %d more lines", len(lines)-maxDiff)))
				break
			}
			b.WriteString(indent + "  " + diffLine(l, st) + "\n")
		}
	}
}

// diffLine colors one line of a unified diff.
func diffLine(l string, st style) string {
	switch {
	case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		return st.paint(ansiBold, l)
	case strings.HasPrefix(l, "@@"):
		return st.paint(ansiCyan, l)
	case strings.HasPrefix(l, "+"):
		return st.paint(ansiGreen, l)
	case strings.HasPrefix(l, "-"):
		return st.paint(ansiRed, l)
	}
	return l
}

// scopeText is a scope as toold describes it, or, without a description,
// built from its fields: "run_command for commands starting with git push
// for 5m".
func scopeText(s *pb.ApprovalScope) string {
	if d := s.GetDescription(); d != "" {
		return d
	}
	what := s.GetTool()
	if op := s.GetOperation(); op != "" && op != what {
		what += "." + op
	}
	if what == "" {
		what = "this tool"
	}
	if p := s.GetPathPrefix(); p != "" {
		what += " under " + p
	}
	if c := s.GetCommandPrefix(); c != "" {
		what += " for commands starting with " + c
	}
	if h := s.GetHost(); h != "" {
		what += " reaching host " + h
	}
	if s.GetKind() != pb.ApprovalScope_KIND_CONVERSATION {
		return what + ", this call only"
	}
	if t := s.GetTtl(); t != nil {
		what += " for " + t.AsDuration().String()
	}
	return what
}

// shellJoin writes command words as a shell would read them back, quoting
// the words that need it.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// outsideSandbox reports whether approving req runs its command outside
// toold's sandbox (an approval of its own kind: shown distinctly, once only,
// never approved by --yes).
func outsideSandbox(req *pb.RequiresApproval) bool {
	return req.GetKind() == pb.ApprovalKind_APPROVAL_KIND_OUTSIDE_SANDBOX
}
