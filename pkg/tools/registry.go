package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/toold/toold/pkg/errdefs"
)

// OperationArg is the argument that selects an operation of a consolidated
// tool.
const OperationArg = "operation"

// Registry is the ordered set of tools a daemon serves. Order is
// registration order and never changes for the tools present, so listings
// are byte-stable (KV-cache friendly). It is safe for concurrent use; tools
// may be added and removed at runtime (MCP servers come and go).
type Registry struct {
	mu      sync.RWMutex
	entries []*entry
	byName  map[string]*entry // tool names and aliases
	flat    map[string]opRef  // flat operation names of consolidated tools
	off     []Unavailable     // tools this daemon does not offer, and why
	// dialects are other agents' tool sets (see Dialect), in order.
	dialects []*Dialect
	// dialectNamed indexes the dialects' tools by name and alias, each
	// name's tools in the order of dialects and of their tools (see
	// matchDialect).
	dialectNamed map[string][]dialectRef
}

// dialectRef is a tool of a registered dialect.
type dialectRef struct {
	d  *Dialect
	dt *DialectTool
}

// Unavailable is a tool a daemon knows but does not offer, because what it
// needs is missing (terminal_operations without a shell). Listings report
// it; calling it by its name, an operation's flat name or "tool.operation"
// fails with ErrUnavailable and Reason instead of "no such tool".
type Unavailable struct {
	// Name is the tool's name; Operations its operations' names.
	Name       string
	Operations []string
	// Reason says why it is off, for the model and the operator.
	Reason string
}

// SetUnavailable records t as a tool this registry does not offer. A tool
// registered under the same name later still wins at resolution.
func (r *Registry) SetUnavailable(t Unavailable) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.off = append(r.off, t)
}

// Unavailable returns the tools recorded by SetUnavailable, in order.
func (r *Registry) Unavailable() []Unavailable {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.off)
}

// unavailableLocked returns the unavailable tool a name means, if any.
func (r *Registry) unavailableLocked(name string) (Unavailable, bool) {
	tool, op, dotted := strings.Cut(name, ".")
	for _, u := range r.off {
		if name == u.Name || (dotted && tool == u.Name && slices.Contains(u.Operations, op)) || slices.Contains(u.Operations, name) {
			return u, true
		}
	}
	return Unavailable{}, false
}

type entry struct {
	tool   Tool
	spec   Spec
	ops    map[string]*compiledOp
	schema json.RawMessage // the tool's own input schema (consolidated or the single operation's)
	risk   Risk            // the highest operation risk
}

type compiledOp struct {
	spec   OperationSpec
	schema *compiledSchema
}

type opRef struct {
	e  *entry
	op string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]*entry{}, flat: map[string]opRef{}}
}

// Register adds tools in order. It fails, adding none of the remaining
// ones, when a name is taken or a schema is not a JSON object. A schema is
// compiled when its operation is first prepared (a start-up compiling every
// schema spent most of its CPU there); CheckSchemas compiles a tool's
// schemas at once, where a bad one must be refused before it is offered.
func (r *Registry) Register(ts ...Tool) error {
	for _, t := range ts {
		if err := r.register(t); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) register(t Tool) error {
	e, err := compileEntry(t)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkNamesLocked(e); err != nil {
		return err
	}
	r.insertLocked(e)
	r.entries = append(r.entries, e)
	return nil
}

// compileEntry checks a tool's spec and compiles its schemas.
func compileEntry(t Tool) (*entry, error) {
	spec := t.Spec()
	if spec.Name == "" || len(spec.Operations) == 0 {
		return nil, fmt.Errorf("tool %q: a tool needs a name and at least one operation", spec.Name)
	}
	// Schemas are kept compact so listings are small and byte-stable.
	spec.Operations = slices.Clone(spec.Operations)
	for i, op := range spec.Operations {
		if len(op.Schema) > 0 {
			var buf bytes.Buffer
			if err := json.Compact(&buf, op.Schema); err != nil {
				return nil, fmt.Errorf("schema of %s.%s: %w", spec.Name, op.Name, err)
			}
			spec.Operations[i].Schema = buf.Bytes()
		}
	}
	e := &entry{tool: t, spec: spec, ops: map[string]*compiledOp{}}
	for _, op := range spec.Operations {
		if _, dup := e.ops[op.Name]; dup {
			return nil, fmt.Errorf("tool %q: duplicate operation %q", spec.Name, op.Name)
		}
		cs, err := parseSchema(spec.Name+"."+op.Name, op.Schema)
		if err != nil {
			return nil, err
		}
		e.ops[op.Name] = &compiledOp{spec: op, schema: cs}
		e.risk = max(e.risk, op.Risk)
	}
	if spec.Consolidated() {
		s, err := consolidatedSchema(spec, e.ops)
		if err != nil {
			return nil, err
		}
		e.schema = s
	} else {
		e.schema = spec.Operations[0].Schema
		if len(e.schema) == 0 {
			e.schema = json.RawMessage(`{"type":"object"}`)
		}
	}
	return e, nil
}

// CheckSchemas checks t's spec as Register does and compiles the JSON
// Schema of each of its operations, failing with the first that does not
// compile. A tool from elsewhere (an MCP server's) is checked with it
// before it is offered, so that no call finds its schema broken.
func CheckSchemas(t Tool) error {
	e, err := compileEntry(t)
	if err != nil {
		return err
	}
	for _, op := range e.spec.Operations {
		if _, err := e.ops[op.Name].schema.compiled(); err != nil {
			return err
		}
	}
	return nil
}

// checkNamesLocked fails when a name of e is taken.
func (r *Registry) checkNamesLocked(e *entry) error {
	for _, n := range append([]string{e.spec.Name}, e.spec.Aliases...) {
		if _, taken := r.byName[n]; taken {
			return fmt.Errorf("tool name %q is already registered", n)
		}
	}
	return nil
}

// insertLocked indexes e's names; the caller places e in r.entries.
func (r *Registry) insertLocked(e *entry) {
	for _, n := range append([]string{e.spec.Name}, e.spec.Aliases...) {
		r.byName[n] = e
	}
	if e.spec.Consolidated() {
		for _, op := range e.spec.Operations {
			// The first tool to claim a flat name keeps it; tool names win
			// over flat names at resolution.
			if _, taken := r.flat[op.Name]; !taken {
				r.flat[op.Name] = opRef{e, op.Name}
			}
		}
	}
}

// Unregister removes a tool by name. It reports whether it was present.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byName[name]
	if !ok || e.spec.Name != name {
		return false
	}
	r.removeLocked(e)
	return true
}

// removeLocked removes e and hands the flat names it held to the next tool
// offering them.
func (r *Registry) removeLocked(e *entry) {
	for _, n := range append([]string{e.spec.Name}, e.spec.Aliases...) {
		delete(r.byName, n)
	}
	for k, ref := range r.flat {
		if ref.e == e {
			delete(r.flat, k)
		}
	}
	r.entries = slices.DeleteFunc(r.entries, func(x *entry) bool { return x == e })
	// Give flat names the removed tool held to the next tool offering them.
	for _, x := range r.entries {
		if !x.spec.Consolidated() {
			continue
		}
		for _, op := range x.spec.Operations {
			if _, taken := r.flat[op.Name]; !taken {
				r.flat[op.Name] = opRef{x, op.Name}
			}
		}
	}
}

// Info is a registered tool as listings show it.
type Info struct {
	Spec Spec
	// Schema is the tool's input schema; for consolidated tools it has the
	// "operation" selector and the union of the operations' properties.
	Schema json.RawMessage
	// Risk is the highest base risk of its operations.
	Risk Risk
}

// List returns every tool in registration order.
func (r *Registry) List() []Info {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Info, len(r.entries))
	for i, e := range r.entries {
		out[i] = Info{Spec: e.spec, Schema: e.schema, Risk: e.risk}
	}
	return out
}

// Target is a resolved tool and operation, ready to validate arguments.
type Target struct {
	Tool Tool
	// ToolName and Operation are the resolved names.
	ToolName, Operation string
	// Risk is the operation's base risk.
	Risk Risk
	op   *compiledOp
	// ops are all operations of the tool (for a consolidated tool, more than op).
	ops          map[string]*compiledOp
	consolidated bool
	// Dialect is the dialect whose tool the call named ("" for toold's
	// own): with a chosen dialect, or matched without one.
	Dialect string
	// shape reshapes the result for a chosen dialect (see Shape).
	shape func(*Result, error) (*Result, error)
	// fixes are the repairs resolution made (name, argument envelope,
	// argument text): see Repairs.
	fixes []Coercion
}

// Repairs returns the repairs resolution made to the call as the model
// wrote it — its name, an argument envelope, the argument text — as
// Coercions (Field NameField for the name). They belong to the call, not
// to its arguments: report them once, before Prepare's coercions.
func (t *Target) Repairs() []Coercion { return slices.Clone(t.fixes) }

// Resolve finds the tool and operation a model meant by name. args are the
// decoded arguments; the "operation" selector, if present, is read and
// removed from them. Resolution, in order: an exact tool name or alias; a
// flat operation name; "tool.operation"; "server.tool" for a tool registered
// as "server__tool". Unknown names fail with ErrToolNotFound and the closest
// names as suggestions.
//
// When the name as written is not found, the spellings models use for a
// registered name are tried (see nameVariants and verbMap): provider
// prefixes, "tool/operation", a trailing "()", case and separator variants,
// and other agents' verbs with one toold equivalent. Arguments wrapped in an
// envelope ({"arguments": {...}}, {"input": {...}}, {"parameters": {...}})
// are unwrapped when the tool takes no argument of that name. Each such
// repair is reported by Target.Repairs as a Coercion (Field NameField for
// the name).
//
// A name that is another agent's tool (a registered Dialect's: Claude
// Code's Bash, gemini-cli's read_file with absolute_path) whose arguments
// that tool takes is mapped as that agent meant it, its arguments too (a
// Claude Bash timeout in milliseconds becomes seconds), each change
// reported — unless the name is toold's own and the arguments are valid
// for it as sent. The result keeps toold's shape (choose the dialect with
// ResolveIn for the agent's).
func (r *Registry) Resolve(name string, args map[string]any) (*Target, error) {
	return r.resolve("", name, args)
}

// resolve is Resolve for a call of conversation (see ResolveCall).
func (r *Registry) resolve(conversation, name string, args map[string]any) (*Target, error) {
	if d, dt := r.dialectFor(name, args); dt != nil {
		return r.resolveDialectTool(conversation, d, dt, name, args, false)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	fixes := takeRepairs(args)
	if keys, inner, ok := envelope(args); ok {
		key := keys[0]
		trial := cloneArgs(inner)
		if t, err := r.resolveVariantsLocked(name, trial); err == nil && !slices.ContainsFunc(keys, t.takes) {
			for k := range args {
				delete(args, k)
			}
			for k, v := range trial {
				args[k] = v
			}
			t.fixes = append(append(fixes, Coercion{Field: "/" + escapePointer(key), From: "{" + truncateText(toJSON(key), 40) + ": ...}", Rule: fmt.Sprintf("arguments unwrapped from the %q envelope", key)}), t.fixes...)
			return t, nil
		}
	}
	t, err := r.resolveVariantsLocked(name, args)
	if err != nil {
		return nil, err
	}
	t.fixes = append(fixes, t.fixes...)
	return t, nil
}

// resolveVariantsLocked resolves name as written, then the variants a
// model may have meant, and reports the rewrite as a fix.
func (r *Registry) resolveVariantsLocked(name string, args map[string]any) (*Target, error) {
	t, err := r.resolveLocked(name, args, false)
	if err == nil || !errors.Is(err, errdefs.ErrToolNotFound) {
		return t, err
	}
	variants := nameVariants(name)
	last := nameVariant{name: name}
	if len(variants) > 0 {
		last = variants[len(variants)-1]
	}
	if to, ok := verbMap[last.name]; ok {
		why := fmt.Sprintf("%q is toold's %s", last.name, to)
		if last.why != "" {
			why = last.why + ", " + why
		}
		variants = append(variants, nameVariant{to, why})
	}
	for _, v := range variants {
		t, verr := r.resolveLocked(v.name, args, false)
		if verr == nil {
			t.fixes = append(t.fixes, Coercion{Field: NameField, From: toJSON(name), To: toJSON(t.callableName()), Rule: "tool name " + v.why})
			return t, nil
		}
		if !errors.Is(verr, errdefs.ErrToolNotFound) {
			return nil, verr
		}
		if e := r.unknownOperationLocked(v.name); e != nil {
			return nil, e
		}
	}
	if e := r.unknownOperationLocked(name); e != nil {
		return nil, e
	}
	// Nothing matched: the error with the closest names.
	_, err = r.resolveLocked(name, args, true)
	if de, ok := err.(*errdefs.Error); ok {
		if h, ok := familyHint(last.name); ok {
			de.Msg = fmt.Sprintf("no tool named %q: %s", name, h)
			de.Suggestions = nil
		} else if h, ok := verbHints[last.name]; ok {
			de.Msg = fmt.Sprintf("no tool named %q: %s", name, h)
		} else if last.name != name && len(de.Suggestions) == 0 {
			// A prefixed or decorated typo: suggest for what is left.
			if sug := r.suggest(last.name, 3); len(sug) > 0 {
				de.Suggestions = sug
				de.Msg = fmt.Sprintf("no tool named %q; did you mean %s?", name, quoteJoin(sug, " or "))
			}
		}
	}
	return nil, err
}

// unknownOperationLocked returns the error for "tool.op" where tool is a
// consolidated tool without that operation: the closest operations, in the
// form a model can call.
func (r *Registry) unknownOperationLocked(name string) error {
	tool, op, ok := strings.Cut(name, ".")
	if !ok {
		return nil
	}
	e, ok := r.byName[tool]
	if !ok || !e.spec.Consolidated() {
		return nil
	}
	names := opNames(e)
	sug := closest(op, names, 2)
	callable := make([]string, len(sug))
	for i, s := range sug {
		callable[i] = e.spec.Name + "." + s
	}
	msg := fmt.Sprintf("%s has no operation %q", e.spec.Name, op)
	if len(sug) > 0 {
		msg += fmt.Sprintf("; did you mean %s? (or call %s with \"operation\": %q)", quoteJoin(callable, " or "), e.spec.Name, sug[0])
	}
	msg += "; its operations: " + strings.Join(names, ", ")
	return &errdefs.Error{Class: errdefs.ErrToolNotFound, Msg: msg, Suggestions: callable}
}

// resolveLocked resolves name exactly as written. Without suggest, a name
// that is not found fails without the (costly) search for close names.
func (r *Registry) resolveLocked(name string, args map[string]any, suggest bool) (*Target, error) {
	if name == "" {
		return nil, &errdefs.Error{Class: errdefs.ErrToolNotFound, Msg: "the tool name is empty; call one of the listed tools", Suggestions: r.suggest("", 5)}
	}
	if e, ok := r.byName[name]; ok {
		if !e.spec.Consolidated() {
			return r.target(e, e.spec.Operations[0].Name, args, "")
		}
		sel, present := args[OperationArg]
		if !present {
			return nil, errdefs.Invalid("/"+OperationArg, "required",
				"missing required argument \"operation\": %s needs one of %s", e.spec.Name, strings.Join(opNames(e), ", "))
		}
		s, ok := sel.(string)
		if !ok {
			return nil, errdefs.Invalid("/"+OperationArg, "type", "argument \"operation\" must be a string, one of %s", strings.Join(opNames(e), ", "))
		}
		delete(args, OperationArg)
		return r.target(e, s, args, "")
	}
	if ref, ok := r.flat[name]; ok {
		return r.target(ref.e, ref.op, args, ref.op)
	}
	if tool, op, ok := strings.Cut(name, "."); ok {
		if e, ok := r.byName[tool]; ok && e.spec.Consolidated() {
			if _, has := e.ops[op]; has {
				return r.target(e, op, args, op)
			}
		}
		if e, ok := r.byName[tool+"__"+op]; ok && !e.spec.Consolidated() {
			return r.target(e, e.spec.Operations[0].Name, args, "")
		}
	}
	if u, ok := r.unavailableLocked(name); ok {
		return nil, errdefs.New(errdefs.ErrUnavailable, "%s is not available on this toold: %s", name, u.Reason)
	}
	if !suggest {
		return nil, &errdefs.Error{Class: errdefs.ErrToolNotFound, Msg: "no tool named " + strconv.Quote(name)}
	}
	sug := r.suggest(name, 3)
	msg := fmt.Sprintf("no tool named %q", name)
	if len(sug) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", quoteJoin(sug, " or "))
	} else {
		msg += "; call one of the tools listed for you"
	}
	return nil, &errdefs.Error{Class: errdefs.ErrToolNotFound, Msg: msg, Suggestions: sug}
}

// target checks the operation exists; implied is the operation the name
// already selected (flat or dotted), which an "operation" argument must not
// contradict.
func (r *Registry) target(e *entry, op string, args map[string]any, implied string) (*Target, error) {
	if implied != "" {
		if sel, present := args[OperationArg]; present {
			if _, isSel := e.ops[OperationArg]; !isSel {
				if s, _ := sel.(string); s != implied {
					return nil, errdefs.Invalid("/"+OperationArg, "const",
						"argument \"operation\" is %s but the tool name selects %q; drop the \"operation\" argument or call %s", toJSON(sel), implied, e.spec.Name)
				}
				delete(args, OperationArg)
			}
		}
	}
	co, ok := e.ops[op]
	var fixes []Coercion
	if !ok && implied == "" {
		if norm := snakeCase(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(op), "()"))); norm != op {
			if co, ok = e.ops[norm]; ok {
				fixes = append(fixes, Coercion{Field: "/" + OperationArg, From: toJSON(op), To: toJSON(norm), Rule: "operation name: case and separators normalized"})
				op = norm
			}
		}
	}
	if !ok {
		names := opNames(e)
		msg := fmt.Sprintf("%s has no operation %q; use one of %s", e.spec.Name, op, strings.Join(names, ", "))
		if sug := closest(op, names, 1); len(sug) > 0 {
			msg = fmt.Sprintf("%s has no operation %q; did you mean %q? (call %s with \"operation\": %q, or %s.%s; operations: %s)", e.spec.Name, op, sug[0], e.spec.Name, sug[0], e.spec.Name, sug[0], strings.Join(names, ", "))
		}
		return nil, errdefs.Invalid("/"+OperationArg, "enum", "%s", msg)
	}
	return &Target{Tool: e.tool, ToolName: e.spec.Name, Operation: op, Risk: co.spec.Risk, op: co, ops: e.ops, consolidated: e.spec.Consolidated(), fixes: fixes}, nil
}

// callableName is the name that calls t directly: the tool, or
// "tool.operation" for an operation of a consolidated tool.
func (t *Target) callableName() string {
	if t.consolidated {
		return t.ToolName + "." + t.Operation
	}
	return t.ToolName
}

// takes reports whether the resolved operation has an argument named key
// (file_operations' apply_patch takes "input"; read_file does not, so a
// read_file call wrapped in {"input": {...}} is still unwrapped).
func (t *Target) takes(key string) bool {
	if p, _ := t.op.schema.raw["properties"].(map[string]any); p != nil {
		_, ok := p[key]
		return ok
	}
	return false
}

// Prepare coerces args by the operation's schema, then validates them. It
// changes args in place and returns the coercions made to them (the
// resolution's own repairs are Repairs). Prepare is idempotent: arguments
// it accepted need no coercion when prepared again.
func (t *Target) Prepare(args map[string]any) ([]Coercion, error) {
	cs := dropForeignNulls(t.op, t.ops, args)
	cs = append(cs, coerce(t.op.schema.raw, args)...)
	if err := t.op.schema.validate(args); err != nil {
		if e, ok := err.(*errdefs.Error); ok && t.Operation != t.ToolName {
			e.Msg = fmt.Sprintf("%s.%s: %s", t.ToolName, t.Operation, e.Msg)
		}
		return cs, err
	}
	return cs, nil
}

// dropForeignNulls removes null arguments that the operation does not take
// but another operation of the same tool does: OpenAI's strict mode makes a
// model send every property of a consolidated tool, null for those it does
// not use. Anything else unknown is left for validation to report.
func dropForeignNulls(op *compiledOp, ops map[string]*compiledOp, args map[string]any) []Coercion {
	if len(ops) < 2 {
		return nil
	}
	own, _ := op.schema.raw["properties"].(map[string]any)
	var keys []string
	for k, v := range args {
		if _, mine := own[k]; v != nil || mine {
			continue
		}
		for _, o := range ops {
			if p, _ := o.schema.raw["properties"].(map[string]any); p != nil {
				if _, theirs := p[k]; theirs {
					keys = append(keys, k)
					break
				}
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	cs := make([]Coercion, 0, len(keys))
	for _, k := range keys {
		delete(args, k)
		cs = append(cs, Coercion{Field: "/" + escapePointer(k), From: "null", Rule: "null for an argument this operation does not take removed"})
	}
	return cs
}

func opNames(e *entry) []string {
	names := make([]string, len(e.spec.Operations))
	for i, op := range e.spec.Operations {
		names[i] = op.Name
	}
	return names
}

func (r *Registry) suggest(name string, n int) []string {
	var all []string
	risk := map[string]Risk{}
	for _, e := range r.entries {
		all = append(all, e.spec.Name)
		all = append(all, e.spec.Aliases...)
		for _, a := range append([]string{e.spec.Name}, e.spec.Aliases...) {
			risk[a] = e.risk
		}
	}
	for k, ref := range r.flat {
		all = append(all, k)
		risk[k] = ref.e.ops[ref.op].spec.Risk
	}
	slices.Sort(all)
	all = slices.Compact(all)
	if name == "" {
		if len(all) > n {
			all = all[:n]
		}
		return all
	}
	// Models often send "Tool.op" with other separators or a provider prefix.
	var out []string
	for _, c := range closest(name, all, len(all)) {
		if plausibleSuggestion(name, c, risk[c]) {
			out = append(out, c)
		}
		if len(out) == n {
			break
		}
	}
	return out
}

// plausibleSuggestion reports whether a close name is worth suggesting for
// what a model wrote: a typo of it (one edit away, for a tool that is not
// high-risk), or the same verb (its first word, within a typo) — and for a
// high-risk tool the verb as written or a typo of a longer one. So a
// sub-agent's "Task" never suggests run_task, a browser's "fill" never
// kill, and "find_file" never read_file.
func plausibleSuggestion(name, cand string, risk Risk) bool {
	n := snakeCase(name)
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		n = n[i+1:]
	}
	c := cand
	if i := strings.LastIndexByte(c, '.'); i >= 0 {
		c = c[i+1:]
	}
	high := risk == RiskHigh || risk == RiskUnknown
	if !high && levenshtein(n, c) <= 1 {
		return true
	}
	nv, _, _ := strings.Cut(n, "_")
	cv, _, _ := strings.Cut(c, "_")
	d := levenshtein(nv, cv)
	limit := 1
	if len(nv) >= 4 {
		limit = 2 // a transposition ("raed")
	}
	if d > limit || (len(nv) < 3 && d > 0) {
		return false
	}
	return !high || nv == cv || (len(nv) >= 5 && d <= 1)
}

func quoteJoin(s []string, sep string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, sep)
}

// consolidatedSchema builds the schema of a consolidated tool: an
// "operation" enum plus the union of the operations' properties, each
// property description noting which operations use it. Arguments are
// validated against the selected operation's own schema, so the union only
// documents.
func consolidatedSchema(spec Spec, ops map[string]*compiledOp) (json.RawMessage, error) {
	type use struct {
		op     string
		schema map[string]any
	}
	uses := map[string][]use{}
	var order []string
	for _, op := range spec.Operations {
		p, _ := ops[op.Name].schema.raw["properties"].(map[string]any)
		keys := make([]string, 0, len(p))
		for k := range p {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if _, seen := uses[k]; !seen {
				order = append(order, k)
			}
			m, _ := cloneJSON(p[k]).(map[string]any)
			uses[k] = append(uses[k], use{op.Name, m})
		}
	}
	props := map[string]any{}
	for _, k := range order {
		us := uses[k]
		same := true
		for _, u := range us[1:] {
			if !reflect.DeepEqual(u.schema, us[0].schema) {
				same = false
			}
		}
		var names []string
		for _, u := range us {
			names = append(names, u.op)
		}
		if same {
			m := us[0].schema
			if len(us) < len(spec.Operations) {
				d, _ := m["description"].(string)
				m["description"] = strings.TrimSpace(d + " (" + strings.Join(names, ", ") + ")")
			}
			props[k] = m
			continue
		}
		// Operations disagree on the property: keep what they share (the
		// type, when it is the same) and each operation's own description;
		// each operation's full rules still apply when it is validated.
		merged := map[string]any{}
		if t := us[0].schema["type"]; t != nil {
			common := true
			for _, u := range us[1:] {
				if !reflect.DeepEqual(u.schema["type"], t) {
					common = false
				}
			}
			if common {
				merged["type"] = t
			}
		}
		// One description per distinct text, naming the operations that
		// share it, in operation order.
		var texts []string
		byText := map[string][]string{}
		for _, u := range us {
			d, _ := u.schema["description"].(string)
			d = strings.TrimSpace(d)
			if _, seen := byText[d]; !seen {
				texts = append(texts, d)
			}
			byText[d] = append(byText[d], u.op)
		}
		descs := make([]string, len(texts))
		for i, d := range texts {
			descs[i] = strings.Join(byText[d], ", ") + ": " + d
		}
		merged["description"] = strings.Join(descs, " ")
		props[k] = merged
	}
	names := make([]any, len(spec.Operations))
	var lines []string
	for i, op := range spec.Operations {
		names[i] = op.Name
		lines = append(lines, op.Name+": "+op.Description)
	}
	props[OperationArg] = map[string]any{
		"type":        "string",
		"enum":        names,
		"description": "The operation to perform. " + strings.Join(lines, " "),
	}
	return json.Marshal(map[string]any{
		"type":       "object",
		"properties": props,
		"required":   []string{OperationArg},
	})
}

func cloneJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
