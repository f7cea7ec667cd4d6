package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toold/toold/pkg/errdefs"
)

// A Dialect is another agent's tool set (Claude Code's Bash, Read, Edit…;
// gemini-cli's run_shell_command, read_file…) presented and executed on
// toold's tools: its tool names, parameter names, types, units and
// descriptions as that agent's model was trained on them. A call to one of
// its tools is mapped at resolution onto a toold operation (reported as
// coercions), runs through toold's whole pipeline (policy, approvals,
// sandbox, tracing, audit), and its result is reshaped for that agent's
// model at the end (Target.Shape).
//
// The definitions live in pkg/tools/dialect; a daemon registers them with
// Registry.RegisterDialect.
type Dialect struct {
	// Name selects the dialect ("claude-code", "gemini-cli", "codex",
	// "openhands", "swe-agent").
	Name string
	// Agent is the agent's name for people ("Claude Code").
	Agent string
	// Version is the published definition the tools follow (a package
	// version or a repository commit).
	Version string
	// Tools are the agent's tools, in the agent's order.
	Tools []DialectTool
}

// DialectTool is one tool of a dialect.
type DialectTool struct {
	// Name, Description and Schema are the agent's own.
	Name        string
	Description string
	Schema      json.RawMessage
	// Aliases are the tool's earlier names (Claude Code's Task before it
	// became Agent): matched, never listed.
	Aliases []string
	// Earlier marks a tool of an earlier release of the agent that the
	// version the dialect follows no longer offers (codex's shell before
	// exec_command): models trained on it still call it, so it is matched
	// and run like an alias, but never listed.
	Earlier bool
	// Legacy are parameters of earlier versions that Map still handles
	// (gemini-cli's absolute_path before file_path): matched, never listed.
	Legacy []string
	// Target is the toold tool or operation that does the work ("read_file",
	// "run_command"); empty when toold has no counterpart.
	Target string
	// Missing, when Target is empty, says what toold offers instead; it is
	// the listing's note and a call's error message.
	Missing string
	// Map rewrites the agent's arguments into Target's, in place, and
	// returns each change as a Coercion (Field the agent's argument). A nil
	// Map passes the arguments through. An error is the call's error (an
	// *errdefs.Error saying what to send). Map may set the argument
	// "operation" to the name of another toold operation of the same risk
	// that this call runs instead of Target (SWE-agent's edit runs
	// edit_file or, in its line-range form, replace_lines).
	Map func(args map[string]any) ([]Coercion, error)
	// Shape reshapes Target's result (or error) the way the agent's model
	// expects it; orig are the arguments as the model sent them (before
	// Map). Nil leaves toold's result as it is. It must not fail a call
	// that succeeded, only reword it.
	Shape func(orig map[string]any, res *Result, err error) (*Result, error)
	// MapIn and ShapeIn, when set, replace Map and Shape for a tool whose
	// calls depend on the conversation's earlier calls (SWE-agent's open
	// file window): they receive the call's conversation id. MapIn must not
	// change the conversation's state — the call may still be refused —;
	// ShapeIn runs once the call ran and may. A stateful tool's result is
	// always shaped, with or without a chosen dialect: its answer is the
	// state it shows.
	MapIn   func(conversation string, args map[string]any) ([]Coercion, error)
	ShapeIn func(conversation string, orig map[string]any, res *Result, err error) (*Result, error)

	// props caches properties, set by RegisterDialect: matching a call
	// against the dialects runs on every call, and parsing each candidate's
	// schema there was a tenth of a no-op call's CPU.
	props map[string]bool
	// snakes caches the snake_case forms of Name and Aliases, set by
	// RegisterDialect, for the same reason (namedFold).
	snakes []string
}

// Available reports whether toold has a counterpart for the tool.
func (t DialectTool) Available() bool { return t.Target != "" }

// properties returns the names of the tool's parameters.
func (t DialectTool) properties() map[string]bool {
	if t.props != nil {
		return t.props
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(t.Schema, &s)
	out := make(map[string]bool, len(s.Properties))
	for k := range s.Properties {
		out[k] = true
	}
	for _, k := range t.Legacy {
		out[k] = true
	}
	return out
}

// named reports whether n is the tool's name or one of its aliases.
func (t *DialectTool) named(n string) bool { return t.Name == n || slices.Contains(t.Aliases, n) }

// namedFold is named ignoring case and separators; snakeN is
// snakeCase(n), which the caller computes once for every tool it asks.
func (t *DialectTool) namedFold(n, snakeN string) bool {
	if strings.EqualFold(t.Name, n) {
		return true
	}
	for _, x := range t.Aliases {
		if strings.EqualFold(x, n) {
			return true
		}
	}
	return slices.Contains(t.snakeNames(), snakeN)
}

// snakeNames returns the snake_case forms of the tool's name and aliases.
func (t *DialectTool) snakeNames() []string {
	if t.snakes != nil {
		return t.snakes
	}
	out := make([]string, 0, 1+len(t.Aliases))
	for _, x := range append([]string{t.Name}, t.Aliases...) {
		out = append(out, snakeCase(x))
	}
	return out
}

// RegisterDialect adds dialects a call may be made in. Their order is the
// order in which a call without a chosen dialect is matched against them.
// A dialect whose name is taken is an error.
func (r *Registry) RegisterDialect(ds ...Dialect) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range ds {
		if d.Name == "" {
			return errors.New("a dialect needs a name")
		}
		if slices.ContainsFunc(r.dialects, func(x *Dialect) bool { return x.Name == d.Name }) {
			return fmt.Errorf("dialect %q is already registered", d.Name)
		}
		d := d
		d.Tools = slices.Clone(d.Tools) // the caller's definitions stay as they are
		for i := range d.Tools {
			dt := &d.Tools[i]
			dt.props = dt.properties()
			dt.snakes = dt.snakeNames()
			if r.dialectNamed == nil {
				r.dialectNamed = map[string][]dialectRef{}
			}
			for _, n := range append([]string{dt.Name}, dt.Aliases...) {
				refs := r.dialectNamed[n]
				if len(refs) == 0 || refs[len(refs)-1].dt != dt { // an alias repeating the name
					r.dialectNamed[n] = append(refs, dialectRef{&d, dt})
				}
			}
		}
		r.dialects = append(r.dialects, &d)
	}
	return nil
}

// Dialects returns the registered dialects, in order.
func (r *Registry) Dialects() []Dialect {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Dialect, len(r.dialects))
	for i, d := range r.dialects {
		out[i] = *d
	}
	return out
}

// Dialect returns the registered dialect named name; "" and "toold" are
// toold's own tools (no dialect). An unknown name is ErrInvalidArgument
// listing the dialects.
func (r *Registry) Dialect(name string) (*Dialect, error) {
	if name == "" || name == "toold" {
		return nil, nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.dialectLocked(name)
}

func (r *Registry) dialectLocked(name string) (*Dialect, error) {
	if name == "" || name == "toold" {
		return nil, nil
	}
	names := []string{"toold"}
	for _, d := range r.dialects {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	return nil, errdefs.New(errdefs.ErrInvalidArgument, "unknown dialect %q; the dialects are %s", name, strings.Join(names, ", "))
}

// ResolveIn is Resolve for a call made in dialect (see Dialect; "" or
// "toold" is plain Resolve). A name that is one of the dialect's tools is
// mapped onto its toold counterpart, its arguments too, and the target
// shapes the result (Target.Shape); a dialect tool without a counterpart
// fails with ErrToolNotFound saying what toold offers instead. Other names
// resolve as Resolve does (toold's own names keep working).
func (r *Registry) ResolveIn(dialect, name string, args map[string]any) (*Target, error) {
	return r.ResolveCall("", dialect, name, args)
}

// ResolveCall is ResolveIn for a call of conversation (the stream's
// conversation id, "" for none): the tools whose calls depend on the
// conversation's earlier calls (DialectTool.MapIn) see that conversation's
// state. The executor resolves every call with it.
func (r *Registry) ResolveCall(conversation, dialect, name string, args map[string]any) (*Target, error) {
	r.mu.RLock()
	d, err := r.dialectLocked(dialect)
	var dt *DialectTool
	if d != nil {
		dt = d.lookup(name)
	}
	r.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if dt == nil {
		return r.resolve(conversation, name, args)
	}
	return r.resolveDialectTool(conversation, d, dt, name, args, true)
}

// lookup finds the dialect's tool by name as written, or after the name
// repairs of nameVariants (a provider prefix, quotes).
func (d *Dialect) lookup(name string) *DialectTool {
	for i := range d.Tools {
		if d.Tools[i].named(name) {
			return &d.Tools[i]
		}
	}
	for _, v := range nameVariants(name) {
		for i := range d.Tools {
			if d.Tools[i].named(v.name) {
				return &d.Tools[i]
			}
		}
	}
	return nil
}

// resolveDialectTool maps a call to dt of d onto its toold target. shape
// says whether the target reshapes the result for the dialect (a chosen
// dialect) or leaves toold's (a call matched to a dialect without one).
func (r *Registry) resolveDialectTool(conversation string, d *Dialect, dt *DialectTool, name string, args map[string]any, shape bool) (*Target, error) {
	if !dt.Available() {
		return nil, &errdefs.Error{Class: errdefs.ErrToolNotFound, Msg: fmt.Sprintf("%s is %s's tool %q; toold has no counterpart: %s", name, d.Agent, dt.Name, dt.Missing)}
	}
	fixes := takeRepairs(args)
	orig := cloneArgs(args)
	var mapped []Coercion
	mapArgs := dt.Map
	if dt.MapIn != nil {
		mapArgs = func(args map[string]any) ([]Coercion, error) { return dt.MapIn(conversation, args) }
	}
	if mapArgs != nil {
		cs, err := mapArgs(args)
		if err != nil {
			if e, ok := err.(*errdefs.Error); ok {
				e.Msg = fmt.Sprintf("%s (%s's %s): %s", name, d.Agent, dt.Name, e.Msg)
			}
			return nil, err
		}
		for _, c := range cs {
			c.Rule = d.Agent + "'s " + dt.Name + ": " + c.Rule
			mapped = append(mapped, c)
		}
	}
	target := dt.Target
	if op, ok := args[OperationArg].(string); ok && mapArgs != nil {
		target = op
		delete(args, OperationArg)
	}
	r.mu.RLock()
	t, err := r.resolveLocked(target, args, false)
	r.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	rule := fmt.Sprintf("tool name %q is %s's %s, run as toold's %s", name, d.Agent, dt.Name, t.callableName())
	t.fixes = append(append(append(fixes, t.fixes...), Coercion{Field: NameField, From: toJSON(name), To: toJSON(t.callableName()), Rule: rule}), mapped...)
	t.Dialect = d.Name
	switch {
	case dt.ShapeIn != nil:
		t.shape = func(res *Result, err error) (*Result, error) { return dt.ShapeIn(conversation, orig, res, err) }
	case shape && dt.Shape != nil:
		t.shape = func(res *Result, err error) (*Result, error) { return dt.Shape(orig, res, err) }
	}
	return t, nil
}

// Shape reshapes a call's result for the dialect it was made in (see
// DialectTool.Shape); without one it returns res and err unchanged. The
// executor applies it to the tool's outcome, after the tool ran.
func (t *Target) Shape(res *Result, err error) (*Result, error) {
	if t == nil || t.shape == nil {
		return res, err
	}
	return t.shape(res, err)
}

// matchDialect finds, for a call made without a dialect, the dialect tool
// the model meant: a tool of some dialect named exactly name (or, when only
// one dialect has it, name in another case), all of whose arguments that
// tool takes. Dialects are tried in registration order.
func (r *Registry) matchDialect(name string, args map[string]any) (*Dialect, *DialectTool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.dialects) == 0 {
		return nil, nil
	}
	fits := func(dt *DialectTool) bool {
		props := dt.properties()
		for k := range args {
			if k == repairsKey {
				continue
			}
			if !props[k] {
				return false
			}
		}
		return true
	}
	exact := func(n string) (*Dialect, *DialectTool) {
		// The index lists the tools named n in the order of the dialects
		// and of their tools: the first that fits, as a walk of every
		// dialect tool would find it (a tenth of a no-op call's CPU in
		// toold's profile, with the five agents' dialects registered).
		for _, ref := range r.dialectNamed[n] {
			if fits(ref.dt) {
				return ref.d, ref.dt
			}
		}
		return nil, nil
	}
	// The name as sent first: most calls stop here, without making the
	// name's variants.
	if d, dt := exact(name); dt != nil {
		return d, dt
	}
	cands := []string{name}
	for _, v := range nameVariants(name) {
		cands = append(cands, v.name)
	}
	for _, n := range cands[1:] {
		if d, dt := exact(n); dt != nil {
			return d, dt
		}
	}
	// Another case: only when one dialect's tool has the name that way.
	for _, n := range cands {
		var hit *DialectTool
		var hd *Dialect
		count := 0
		sn := snakeCase(n)
		for _, d := range r.dialects {
			for i := range d.Tools {
				if dt := &d.Tools[i]; dt.namedFold(n, sn) {
					count++
					if fits(dt) {
						hit, hd = dt, d
					}
				}
			}
		}
		if count == 1 && hit != nil {
			return hd, hit
		}
	}
	return nil, nil
}

// dialectFor returns the dialect tool a call made without a dialect means,
// if any: one matchDialect finds, unless the name is toold's own and the
// arguments are valid for it as they are (then it is toold's call).
func (r *Registry) dialectFor(name string, args map[string]any) (*Dialect, *DialectTool) {
	d, dt := r.matchDialect(name, args)
	if dt == nil {
		return nil, nil
	}
	if dt.Target == name && dt.Map == nil {
		// The agent's tool is toold's own under its own name, arguments
		// as they are (OpenHands' think): toold's tool as sent, without
		// resolving and validating the call twice to find that out.
		return nil, nil
	}
	trial := cloneArgs(args)
	delete(trial, repairsKey)
	r.mu.RLock()
	t, err := r.resolveLocked(name, trial, false)
	r.mu.RUnlock()
	if err == nil {
		if _, perr := t.Prepare(trial); perr == nil {
			return nil, nil
		}
	}
	return d, dt
}

// DialectListing returns a dialect's tools as listings show them: those
// toold runs, as Infos with the agent's name, description and schema (the
// Spec's Source says "dialect:NAME -> TARGET", the risk is the target's),
// and those it does not — no counterpart, or a target this daemon does not
// offer — as Unavailable with what toold offers instead. An unknown name
// is ErrInvalidArgument; "" and "toold" return nil.
func (r *Registry) DialectListing(name string) (*Dialect, []Info, []Unavailable, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, err := r.dialectLocked(name)
	if d == nil || err != nil {
		return nil, nil, nil, err
	}
	var infos []Info
	var off []Unavailable
	for _, dt := range d.Tools {
		if dt.Earlier {
			continue
		}
		if !dt.Available() {
			off = append(off, Unavailable{Name: dt.Name, Reason: dt.Missing})
			continue
		}
		t, err := r.resolveLocked(dt.Target, map[string]any{}, false)
		if err != nil {
			reason := err.Error()
			if u, ok := r.unavailableLocked(dt.Target); ok {
				reason = u.Reason
			}
			off = append(off, Unavailable{Name: dt.Name, Reason: fmt.Sprintf("runs as toold's %s, which is not available here: %s", dt.Target, reason)})
			continue
		}
		spec := Spec{
			Name: dt.Name, Description: dt.Description,
			Source:     fmt.Sprintf("dialect:%s -> %s", d.Name, t.callableName()),
			Operations: []OperationSpec{{Name: dt.Name, Description: dt.Description, Risk: t.Risk, Schema: dt.Schema, Long: t.op != nil && t.op.spec.Long, Fast: t.Fast(), Instant: t.Instant()}},
		}
		infos = append(infos, Info{Spec: spec, Schema: dt.Schema, Risk: t.Risk})
	}
	return d, infos, off, nil
}
