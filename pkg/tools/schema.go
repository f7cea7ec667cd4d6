package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/toold/toold/pkg/errdefs"
)

// Coercion records one argument converted by the schema before validation.
type Coercion struct {
	// Field is the JSON pointer of the argument ("/limit").
	Field string
	// From is the value as received, as JSON.
	From string
	// To is the value used, as JSON; empty when the argument was removed.
	To string
	// Rule says why ("string to integer").
	Rule string
}

// compiledSchema is an operation's schema, kept as a plain value for
// coercion and compiled for validation on first use: compiling every tool's
// schema (and validating it against the draft's metaschema) was most of
// toold's CPU from exec to SERVING, for operations a conversation may never
// call. CheckSchemas compiles them at once where a bad schema must be refused
// when it is offered (an MCP server's tools).
type compiledSchema struct {
	name string // "tool.operation"
	raw  map[string]any
	// flat is the schema's flat form when it has one (see flatSchema):
	// arguments it accepts need no walk of the compiled schema.
	flat *flatSchema

	once   sync.Once
	schema *jsonschema.Schema
	err    error
}

// parseSchema parses an operation's schema (an empty one is any object);
// compiled compiles it.
func parseSchema(name string, raw json.RawMessage) (*compiledSchema, error) {
	if len(raw) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema of %s: not a JSON object", name)
	}
	return &compiledSchema{name: name, raw: m, flat: parseFlatSchema(m)}, nil
}

// compiled returns the compiled schema, compiling it on the first call;
// every call returns the first one's result. raw is only read (by the
// compiler too), so calls may race with coercion.
func (c *compiledSchema) compiled() (*jsonschema.Schema, error) {
	c.once.Do(func() {
		comp := jsonschema.NewCompiler()
		comp.DefaultDraft(jsonschema.Draft2020)
		url := "toold:///" + c.name + ".json"
		if err := comp.AddResource(url, any(c.raw)); err != nil {
			c.err = fmt.Errorf("schema of %s: %w", c.name, err)
			return
		}
		if c.schema, c.err = comp.Compile(url); c.err != nil {
			c.err = fmt.Errorf("schema of %s: %w", c.name, c.err)
		}
	})
	return c.schema, c.err
}

// DecodeArguments parses a model's JSON argument text into an object. Empty
// text (or only whitespace) means no arguments. Numbers are kept exact as
// json.Number. Text that is not a JSON object is repaired when the result
// is unambiguous (see repairText: a Markdown fence, a double-encoded
// object, trailing commas, a Python literal); the repairs travel in the map
// to Registry.Resolve, which reports them through Target.Prepare (or use
// DecodeArgumentsReport). Anything else fails with INVALID_ARGUMENTS
// showing what was received.
func DecodeArguments(text string) (map[string]any, error) {
	if m, ok := decodeFlat(text); ok {
		return m, nil
	}
	if strings.TrimSpace(text) == "" {
		return map[string]any{}, nil
	}
	m, rules, err := repairText(text)
	if err != nil {
		return nil, argumentsError(text, err)
	}
	if len(rules) > 0 {
		m[repairsKey] = []Coercion{{Field: "", From: toJSON(truncateText(strings.TrimSpace(text), 120)), Rule: "argument text repaired: " + strings.Join(rules, ", ")}}
	}
	return m, nil
}

// decodeJSON is jsonschema.UnmarshalJSON (numbers as json.Number) without
// its second pass over the input to find trailing data: only whitespace may
// follow the value.
func decodeJSON(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if rest := strings.TrimLeft(text[dec.InputOffset():], " \t\r\n"); rest != "" {
		return nil, fmt.Errorf("invalid character %q after top-level value", rest[0])
	}
	return v, nil
}

func jsonErrorText(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.Contains(s[:i], "jsonschema") {
		s = s[i+2:]
	}
	return s
}

// coerce converts arguments whose JSON type disagrees with the schema in the
// few ways models commonly get wrong, and only where the schema says so:
// a string holding an integer, number or boolean; a string holding a JSON
// array or object; "null", "None" or null for an optional property that does
// not accept null (removed). It recurses into object properties and array
// items. args is changed in place; every change is returned.
func coerce(schema map[string]any, args map[string]any) []Coercion {
	var out []Coercion
	coerceObject(schema, args, "", &out)
	return out
}

func coerceObject(schema map[string]any, obj map[string]any, ptr string, out *[]Coercion) {
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		return
	}
	// Sorted so coercions are reported in a stable order. (A call's few
	// arguments are sorted on the stack, and a field's pointer is made
	// only when a coercion or a nested value needs it: this runs for
	// every call.)
	var buf [8]string
	keys := buf[:0]
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ps, ok := props[k].(map[string]any)
		if !ok {
			continue
		}
		field := func() string { return ptr + "/" + escapePointer(k) }
		v := obj[k]
		if isNullish(v) && !isRequired(schema, k) && !allowsType(ps, "null") && !(isString(v) && allowsType(ps, "string")) {
			delete(obj, k)
			*out = append(*out, Coercion{Field: field(), From: toJSON(v), Rule: "null for optional argument removed"})
			continue
		}
		if str, ok := v.(string); ok && strings.TrimSpace(str) == "" && !isRequired(schema, k) && !allowsType(ps, "string") && ps["type"] != nil {
			delete(obj, k)
			*out = append(*out, Coercion{Field: field(), From: toJSON(v), Rule: "empty string for optional non-string argument removed"})
			continue
		}
		nv, rule := coerceValue(ps, v)
		if rule != "" {
			obj[k] = nv
			*out = append(*out, Coercion{Field: field(), From: toJSON(v), To: toJSON(nv), Rule: rule})
			v = nv
		}
		switch v.(type) {
		case map[string]any, []any:
			coerceInside(ps, v, field(), out)
		}
	}
}

// isRequired reports whether schema's "required" lists k.
func isRequired(schema map[string]any, k string) bool {
	req, _ := schema["required"].([]any)
	for _, r := range req {
		if s, ok := r.(string); ok && s == k {
			return true
		}
	}
	return false
}

func coerceInside(schema map[string]any, v any, ptr string, out *[]Coercion) {
	switch x := v.(type) {
	case map[string]any:
		coerceObject(schema, x, ptr, out)
	case []any:
		items, ok := schema["items"].(map[string]any)
		if !ok {
			return
		}
		for i, e := range x {
			field := ptr + "/" + strconv.Itoa(i)
			nv, rule := coerceValue(items, e)
			if rule != "" {
				x[i] = nv
				*out = append(*out, Coercion{Field: field, From: toJSON(e), To: toJSON(nv), Rule: rule})
				e = nv
			}
			coerceInside(items, e, field, out)
		}
	}
}

// coerceValue converts one value when its schema wants another JSON type.
// It returns the rule applied, or "" when nothing changed.
func coerceValue(schema map[string]any, v any) (any, string) {
	if nv, rule := coerceEnumCase(schema, v); rule != "" {
		return nv, rule
	}
	s, ok := v.(string)
	if !ok {
		return coerceNonString(schema, v)
	}
	if allowsType(schema, "string") {
		return v, ""
	}
	t := strings.TrimSpace(s)
	switch {
	case allowsType(schema, "integer"):
		if i, err := strconv.ParseInt(t, 10, 64); err == nil {
			return json.Number(strconv.FormatInt(i, 10)), "string to integer"
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) && math.Abs(f) < 1<<53 {
			return json.Number(strconv.FormatInt(int64(f), 10)), "string to integer"
		}
	case allowsType(schema, "number"):
		if f, err := strconv.ParseFloat(t, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return json.Number(t), "string to number"
		}
	}
	if allowsType(schema, "boolean") {
		switch strings.ToLower(t) {
		case "true", "yes", "on", "1", "y":
			return true, "string to boolean"
		case "false", "no", "off", "0", "n":
			return false, "string to boolean"
		}
	}
	if allowsType(schema, "array") && strings.HasPrefix(t, "[") {
		if a, err := jsonschema.UnmarshalJSON(strings.NewReader(t)); err == nil {
			if arr, ok := a.([]any); ok {
				return arr, "string to array"
			}
		}
		if py, ok := pythonToJSON(t); ok {
			if a, err := jsonschema.UnmarshalJSON(strings.NewReader(py)); err == nil {
				if arr, ok := a.([]any); ok {
					return arr, "string to array (Python list literal)"
				}
			}
		}
	}
	if allowsType(schema, "object") && strings.HasPrefix(t, "{") {
		if o, _, err := repairText(t); err == nil {
			return o, "string to object"
		}
	}
	if allowsType(schema, "array") && !strings.HasPrefix(t, "[") {
		items, _ := schema["items"].(map[string]any)
		switch {
		case items != nil && (allowsType(items, "integer") || allowsType(items, "number")) && !allowsType(items, "string"):
			// Numbers cannot hold a comma: "1, 2, 3" is a list.
			var arr []any
			for _, part := range strings.Split(t, ",") {
				nv, rule := coerceValue(items, strings.TrimSpace(part))
				if rule == "" {
					return v, ""
				}
				arr = append(arr, nv)
			}
			return arr, "comma-separated string to array"
		case items == nil || allowsType(items, "string"):
			// One value where a list is wanted: a list of one. A comma
			// could be part of the value, so a string with one is left
			// for validation to report with the list it may have meant.
			if t != "" && !strings.ContainsAny(t, ",\n") {
				return []any{s}, "single value wrapped in an array"
			}
		}
	}
	return v, ""
}

// coerceNonString converts a JSON number the schema wants as another
// type: 0 or 1 where a boolean is wanted becomes false or true; one number
// where an array of numbers is wanted becomes a list of one.
func coerceNonString(schema map[string]any, v any) (any, string) {
	n, isNum := v.(json.Number)
	if !isNum {
		return v, ""
	}
	// A number where only a string is allowed is not converted: it fails
	// validation with the string to send (see typeHint).
	switch {
	case allowsType(schema, "integer") || allowsType(schema, "number") || allowsType(schema, "string"):
		return v, ""
	case allowsType(schema, "boolean"):
		switch n.String() {
		case "1":
			return true, "number to boolean"
		case "0":
			return false, "number to boolean"
		}
	case allowsType(schema, "array"):
		if items, _ := schema["items"].(map[string]any); items != nil && (allowsType(items, "integer") || allowsType(items, "number")) {
			return []any{v}, "single value wrapped in an array"
		}
	}
	return v, ""
}

// coerceEnumCase maps a string that matches exactly one enum value when
// case, "-" and spaces are ignored to that value.
func coerceEnumCase(schema map[string]any, v any) (any, string) {
	s, ok := v.(string)
	enum, _ := schema["enum"].([]any)
	if !ok || len(enum) == 0 {
		return v, ""
	}
	var match string
	n := 0
	for _, e := range enum {
		es, ok := e.(string)
		if !ok {
			continue
		}
		if es == s {
			return v, ""
		}
		if snakeCase(strings.TrimSpace(s)) == snakeCase(es) {
			match = es
			n++
		}
	}
	if n == 1 {
		return match, "enum value matched ignoring case and separators"
	}
	return v, ""
}

// allowsType reports whether the schema's "type" names t. A schema without
// "type" allows nothing in particular (no coercion happens).
func allowsType(schema map[string]any, t string) bool {
	switch x := schema["type"].(type) {
	case string:
		return x == t
	case []any:
		for _, e := range x {
			if e == t {
				return true
			}
		}
	}
	return false
}

func isString(v any) bool { _, ok := v.(string); return ok }

func isNullish(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		switch strings.TrimSpace(x) {
		case "null", "None", "NULL", "Null", "nil", "undefined", "none":
			return true
		}
	}
	return false
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func toJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

var printer = message.NewPrinter(language.English)

// validate checks args against the schema and turns the first failure into
// an INVALID_ARGUMENTS error naming the field and the rule.
func (c *compiledSchema) validate(args map[string]any) error {
	schema, err := c.compiled()
	if err != nil {
		// Only a tool registered without CheckSchemas can get here: a
		// built-in's schemas are compiled by the package's tests.
		return errdefs.Wrap(errdefs.ErrInternal, err, "the tool's input schema does not compile: %v", err)
	}
	if c.flat != nil && c.flat.accepts(args) {
		return nil
	}
	err = schema.Validate(any(args))
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return errdefs.Wrap(errdefs.ErrInvalidArgument, err, "arguments are invalid: %v", err)
	}
	leaves := collectLeaves(ve, nil)
	// Unknown arguments first: they usually explain a "missing" one.
	sort.SliceStable(leaves, func(i, j int) bool {
		return ruleName(leaves[i].ErrorKind) == "additionalProperties" && ruleName(leaves[j].ErrorKind) != "additionalProperties"
	})
	var msgs []string
	seen := map[string]bool{}
	for _, l := range leaves {
		m := describeFailure(c.raw, args, l, fieldOf(l))
		if !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	first := leaves[0]
	e := errdefs.Invalid(fieldOf(first), ruleName(first.ErrorKind), "%s", strings.Join(msgs, "; "))
	e.Cause = err
	return e
}

// fieldOf returns the JSON pointer of the offending argument; for a missing
// required argument, the pointer it should have been at.
func fieldOf(e *jsonschema.ValidationError) string {
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		if len(k.Missing) > 0 {
			loc = append(slices.Clone(loc), k.Missing[0])
		}
	case *kind.AdditionalProperties:
		if len(k.Properties) > 0 {
			loc = append(slices.Clone(loc), k.Properties[0])
		}
	}
	if len(loc) == 0 {
		return ""
	}
	return "/" + strings.Join(pointerTokens(loc), "/")
}

// collectLeaves gathers the most specific failures. Under anyOf/oneOf only
// the first branch's failures are kept, to stay readable.
func collectLeaves(e *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return append(out, e)
	}
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		return collectLeaves(e.Causes[0], out)
	}
	for _, c := range e.Causes {
		out = collectLeaves(c, out)
	}
	return out
}

func pointerTokens(loc []string) []string {
	out := make([]string, len(loc))
	for i, t := range loc {
		out[i] = escapePointer(t)
	}
	return out
}

func ruleName(k jsonschema.ErrorKind) string {
	p := k.KeywordPath()
	if len(p) == 0 {
		return "schema"
	}
	return p[len(p)-1]
}

// describeFailure writes the validation failure for a model: which argument,
// what rule, and what to send instead.
func describeFailure(schema map[string]any, args map[string]any, e *jsonschema.ValidationError, field string) string {
	where := "arguments"
	if field != "" {
		where = fmt.Sprintf("argument %q", strings.TrimPrefix(field, "/"))
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		names := make([]string, len(k.Missing))
		for i, m := range k.Missing {
			names[i] = strconv.Quote(m)
		}
		return fmt.Sprintf("missing required argument %s%s", strings.Join(names, ", "), propertyHint(schema, e.InstanceLocation, k.Missing))
	case *kind.AdditionalProperties:
		var parts []string
		for _, p := range k.Properties {
			s := fmt.Sprintf("unknown argument %q", p)
			v := instanceAt(args, append(slices.Clone(e.InstanceLocation), p))
			props := propertiesAt(schema, e.InstanceLocation)
			// Only an argument that could take the value sent: a text is
			// never suggested as a boolean flag ("replace" → "replace_all").
			var fit []string
			for _, c := range closest(p, propertyNames(schema, e.InstanceLocation), 3) {
				if ps, _ := props[c].(map[string]any); valueFits(v, ps) {
					fit = append(fit, c)
				}
			}
			if len(fit) > 0 {
				s += fmt.Sprintf(" (did you mean %q?)", fit[0])
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "; ") + "; allowed arguments: " + strings.Join(propertyNames(schema, e.InstanceLocation), ", ")
	case *kind.Type:
		return fmt.Sprintf("%s must be %s, got %s%s", where, strings.Join(k.Want, " or "), k.Got, typeHint(k.Want, instanceAt(args, e.InstanceLocation)))
	}
	return fmt.Sprintf("%s: %s", where, e.ErrorKind.LocalizedString(printer))
}

func propertyHint(schema map[string]any, loc []string, missing []string) string {
	props := propertiesAt(schema, loc)
	var hints []string
	for _, m := range missing {
		if p, ok := props[m].(map[string]any); ok {
			if d, ok := p["description"].(string); ok && d != "" {
				hints = append(hints, fmt.Sprintf("%s: %s", m, d))
			}
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, "; ") + ")"
}

func propertiesAt(schema map[string]any, loc []string) map[string]any {
	s := schema
	for _, tok := range loc {
		props, _ := s["properties"].(map[string]any)
		next, ok := props[tok].(map[string]any)
		if !ok {
			if items, ok := s["items"].(map[string]any); ok {
				next = items
			} else {
				return nil
			}
		}
		s = next
	}
	props, _ := s["properties"].(map[string]any)
	return props
}

func propertyNames(schema map[string]any, loc []string) []string {
	props := propertiesAt(schema, loc)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// closest returns up to n candidates nearest to name by edit distance,
// among those close enough to be a plausible typo or variant.
func closest(name string, candidates []string, n int) []string {
	type scored struct {
		s string
		d int
	}
	lname := strings.ToLower(name)
	var out []scored
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := levenshtein(lname, lc)
		limit := max(2, len(lname)/3)
		switch {
		case d <= limit:
		case len(lname) >= 3 && (strings.Contains(lc, lname) || strings.Contains(lname, lc)):
			d = limit + 1
		default:
			continue
		}
		out = append(out, scored{c, d})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].s < out[j].s
	})
	res := make([]string, 0, n)
	for i := 0; i < len(out) && i < n; i++ {
		res = append(res, out[i].s)
	}
	return res
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// instanceAt returns the value at loc in args, or nil.
func instanceAt(args map[string]any, loc []string) any {
	var cur any = args
	for _, tok := range loc {
		switch x := cur.(type) {
		case map[string]any:
			cur = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			cur = x[i]
		default:
			return nil
		}
	}
	return cur
}

// typeHint shows the value a type failure wanted, built from what was
// sent: a comma-separated string as the list it may have meant.
func typeHint(want []string, got any) string {
	if n, ok := got.(json.Number); ok && slices.Contains(want, "string") {
		return fmt.Sprintf("; send it as a JSON string: %q", n.String())
	}
	s, ok := got.(string)
	if !ok || !slices.Contains(want, "array") {
		return ""
	}
	var parts []any
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "; send a JSON array such as [\"a\", \"b\"]"
	}
	b, _ := json.Marshal(parts)
	return fmt.Sprintf("; send a JSON array, e.g. %s if you meant %d items", b, len(parts))
}

// valueFits reports whether v has a JSON type the property schema allows
// (any, when it names none).
func valueFits(v any, prop map[string]any) bool {
	var types []string
	switch t := prop["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				types = append(types, s)
			}
		}
	}
	if len(types) == 0 || v == nil {
		return true
	}
	for _, t := range types {
		switch v.(type) {
		case string:
			if t == "string" {
				return true
			}
		case bool:
			if t == "boolean" {
				return true
			}
		case json.Number, float64:
			if t == "number" || t == "integer" {
				return true
			}
		case []any:
			if t == "array" {
				return true
			}
		case map[string]any:
			if t == "object" {
				return true
			}
		}
	}
	return false
}
