package authz

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/authz/internal/shellread"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"

	"github.com/toold/toold/pkg/errdefs"
)

// PolicyFile is a policy file as written, in YAML or TOML (the keys are the
// same). docs/policy.md describes it; examples/policy.yaml is a worked
// example.
type PolicyFile struct {
	// Version is 1 (or absent).
	Version int `yaml:"version" toml:"version"`
	// BuiltinRules includes toold's built-in rules (rm -rf /, pipes from
	// curl into a shell, cloud metadata addresses, ...) before the file's
	// own; default true.
	BuiltinRules *bool `yaml:"builtin_rules" toml:"builtin_rules"`
	// ReadRoots are directories outside the workspace that AUTO mode reads
	// without asking (absolute or ~/).
	ReadRoots []string `yaml:"read_roots" toml:"read_roots"`
	// Sensitive changes the list of sensitive paths.
	Sensitive SensitiveSpec `yaml:"sensitive" toml:"sensitive"`
	// Rules are the allow / ask / deny rules, in order.
	Rules []RuleSpec `yaml:"rules" toml:"rules"`
}

// SensitiveSpec adds to and removes from DefaultSensitive.
type SensitiveSpec struct {
	// Add lists further path patterns (! excludes).
	Add []string `yaml:"add" toml:"add"`
	// Remove lists default patterns to drop, by their exact text.
	Remove []string `yaml:"remove" toml:"remove"`
}

// RuleSpec is one rule as written. A rule matches a call when its tool,
// operation and args match (each absent means any) and, when it has one of
// commands, paths or hosts, that matcher matches a part of the call: a
// command of its command line, a path it touches, a host it reaches.
type RuleSpec struct {
	// Name identifies the rule in decisions and logs; unique.
	Name string `yaml:"name" toml:"name"`
	// Decision is allow, ask or deny.
	Decision string `yaml:"decision" toml:"decision"`
	// Reason is shown to the model (deny) and to people (ask).
	Reason string `yaml:"reason" toml:"reason"`
	// Tool and Operation are globs of the tool and operation names; a
	// string or a list.
	Tool      StringList `yaml:"tool" toml:"tool"`
	Operation StringList `yaml:"operation" toml:"operation"`
	// Args maps argument names to globs of their values (non-strings as
	// JSON).
	Args map[string]string `yaml:"args" toml:"args"`
	// Commands are command patterns (see docs/policy.md).
	Commands []string `yaml:"commands" toml:"commands"`
	// Piped limits a commands rule to commands that read a pipe;
	// PipedFrom to commands that read a pipe one of these commands (globs)
	// writes to.
	Piped     bool     `yaml:"piped" toml:"piped"`
	PipedFrom []string `yaml:"piped_from" toml:"piped_from"`
	// Paths are path patterns; Access limits them to read, write or any
	// (default).
	Paths  []string `yaml:"paths" toml:"paths"`
	Access string   `yaml:"access" toml:"access"`
	// Hosts are globs of network hosts.
	Hosts []string `yaml:"hosts" toml:"hosts"`
	// Sensitive lets an allow rule with paths allow sensitive paths it
	// matches.
	Sensitive bool `yaml:"sensitive" toml:"sensitive"`
	// Examples must and must not match; checked when the file loads.
	Examples Examples `yaml:"examples" toml:"examples"`
}

// Examples are calls a rule must match and must not match.
type Examples struct {
	Match   []Example `yaml:"match" toml:"match"`
	NoMatch []Example `yaml:"no_match" toml:"no_match"`
}

// Example is a call in short form. A string means a command line for a
// commands rule, a path for a paths rule, a host for a hosts rule, and
// "tool" or "tool.operation" otherwise; a mapping sets the fields.
type Example struct {
	Tool      string         `yaml:"tool" toml:"tool"`
	Operation string         `yaml:"operation" toml:"operation"`
	Args      map[string]any `yaml:"args" toml:"args"`
	Command   string         `yaml:"command" toml:"command"`
	Path      string         `yaml:"path" toml:"path"`
	// Access is read or write, for a path (default: the rule's, or read).
	Access string `yaml:"access" toml:"access"`
	Host   string `yaml:"host" toml:"host"`
	// Raw is the example when written as a string.
	Raw string `yaml:"-" toml:"-"`
}

var exampleKeys = []string{"tool", "operation", "args", "command", "path", "access", "host"}

// String shows the example as written, for error messages.
func (e Example) String() string {
	if e.Raw != "" {
		return e.Raw
	}
	var parts []string
	for _, kv := range [][2]string{{"tool", e.Tool}, {"operation", e.Operation}, {"command", e.Command}, {"path", e.Path}, {"access", e.Access}, {"host", e.Host}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	if len(e.Args) > 0 {
		parts = append(parts, fmt.Sprintf("args=%v", e.Args))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// UnmarshalYAML accepts a string or a mapping with known keys.
func (e *Example) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Decode(&e.Raw)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; !slices.Contains(exampleKeys, k) {
				return fmt.Errorf("line %d: unknown example key %q (want one of %s)", n.Content[i].Line, k, strings.Join(exampleKeys, ", "))
			}
		}
		type plain Example
		var p plain
		if err := n.Decode(&p); err != nil {
			return err
		}
		*e = Example(p)
		return nil
	}
	return fmt.Errorf("line %d: an example is a string or a mapping", n.Line)
}

// UnmarshalTOML accepts a string or a table with known keys.
func (e *Example) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		e.Raw = x
		return nil
	case map[string]any:
		for k, val := range x {
			if k == "args" {
				m, ok := val.(map[string]any)
				if !ok {
					return fmt.Errorf("example args must be a table")
				}
				e.Args = m
				continue
			}
			s, ok := val.(string)
			if !ok {
				return fmt.Errorf("example key %q must be a string", k)
			}
			switch k {
			case "tool":
				e.Tool = s
			case "operation":
				e.Operation = s
			case "command":
				e.Command = s
			case "path":
				e.Path = s
			case "access":
				e.Access = s
			case "host":
				e.Host = s
			default:
				return fmt.Errorf("unknown example key %q (want one of %s)", k, strings.Join(exampleKeys, ", "))
			}
		}
		return nil
	}
	return fmt.Errorf("an example is a string or a table")
}

// StringList is a list of strings written as one string or a list.
type StringList []string

// UnmarshalYAML implements yaml.Unmarshaler.
func (l *StringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*l = StringList{s}
		return nil
	case yaml.SequenceNode:
		var ss []string
		if err := n.Decode(&ss); err != nil {
			return err
		}
		*l = ss
		return nil
	}
	return fmt.Errorf("line %d: want a string or a list of strings", n.Line)
}

// UnmarshalTOML implements toml.Unmarshaler.
func (l *StringList) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		*l = StringList{x}
		return nil
	case []any:
		out := make(StringList, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("want a string or a list of strings")
			}
			out = append(out, s)
		}
		*l = out
		return nil
	}
	return fmt.Errorf("want a string or a list of strings")
}

// Policy is a loaded, checked policy. It is immutable and safe for
// concurrent use; one Policy may serve several Engines.
type Policy struct {
	source    string
	file      PolicyFile
	rules     []*rule
	builtin   bool
	sensitive []string
	readRoots []string
}

// Source names where the policy came from: a file name, or "builtin".
func (p *Policy) Source() string { return p.source }

// File returns the policy as written.
func (p *Policy) File() PolicyFile { return p.file }

// RuleNames lists the policy's rules in order, built-in rules first when
// the policy includes them.
func (p *Policy) RuleNames() []string {
	var out []string
	for _, r := range p.allRules() {
		out = append(out, r.name)
	}
	return out
}

func (p *Policy) allRules() []*rule {
	if !p.builtin || p == builtin() {
		return p.rules
	}
	return append(slices.Clone(builtin().rules), p.rules...)
}

//go:embed builtin.yaml
var builtinYAML []byte

// builtin returns toold's built-in rules (builtin.yaml), named
// builtin:NAME, parsed on first use.
var builtin func() *Policy

func init() {
	// Assigned in init: compilePolicy refers to builtin.
	builtin = sync.OnceValue(func() *Policy {
		p, err := parsePolicy(builtinYAML, "yaml", "builtin", "builtin:")
		if err != nil {
			panic(fmt.Sprintf("authz: built-in policy: %v", err))
		}
		p.builtin = true
		return p
	})
}

// checkBuiltinExamples makes parsing the built-in rules check their
// examples, as for any policy file (tests set it).
var checkBuiltinExamples = false

// DefaultPolicy returns the policy used when none is configured: the
// built-in rules, the default sensitive paths, no read roots.
func DefaultPolicy() *Policy { return builtin() }

// LoadPolicy reads and checks a policy file: YAML (.yaml, .yml) or TOML
// (.toml), by its extension. Unknown keys, bad patterns, and rules that
// contradict their own examples are errors (of class
// errdefs.ErrInvalidArgument) naming the rule and the example.
func LoadPolicy(file string) (*Policy, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var format string
	switch strings.ToLower(filepath.Ext(file)) {
	case ".yaml", ".yml":
		format = "yaml"
	case ".toml":
		format = "toml"
	default:
		return nil, errdefs.Invalid("", "format", "policy file %s: unknown format; name it .yaml, .yml or .toml", file)
	}
	return ParsePolicy(b, format, file)
}

// ParsePolicy parses and checks a policy in format "yaml" or "toml";
// source names it in errors.
func ParsePolicy(data []byte, format, source string) (*Policy, error) {
	return parsePolicy(data, format, source, "")
}

func parsePolicy(data []byte, format, source, prefix string) (*Policy, error) {
	var f PolicyFile
	switch format {
	case "yaml":
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
			return nil, errdefs.Invalid("", "syntax", "policy %s: %v", source, err)
		}
	case "toml":
		md, err := toml.Decode(string(data), &f)
		if err != nil {
			return nil, errdefs.Invalid("", "syntax", "policy %s: %v", source, err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			keys := make([]string, 0, len(und))
			for _, k := range und {
				keys = append(keys, k.String())
			}
			return nil, errdefs.Invalid("", "syntax", "policy %s: unknown keys: %s", source, strings.Join(keys, ", "))
		}
	default:
		return nil, errdefs.Invalid("", "format", "policy %s: unknown format %q (want yaml or toml)", source, format)
	}
	return compilePolicy(f, source, prefix)
}

// reservedPrefixes are rule-name prefixes of toold's own decisions.
var reservedPrefixes = []string{"builtin:", "mode:", "grant:"}

func compilePolicy(f PolicyFile, source, prefix string) (*Policy, error) {
	skipExamples := prefix != "" && source == "builtin" && !checkBuiltinExamples
	if f.Version != 0 && f.Version != 1 {
		return nil, errdefs.Invalid("version", "version", "policy %s: version %d is not supported (want 1)", source, f.Version)
	}
	p := &Policy{source: source, file: f, builtin: f.BuiltinRules == nil || *f.BuiltinRules}
	sens, err := sensitivePatterns(f.Sensitive.Add, f.Sensitive.Remove)
	if err != nil {
		return nil, errdefs.Invalid("sensitive", "sensitive", "policy %s: %v", source, err)
	}
	for _, s := range sens {
		if _, err := compilePathPattern(s); err != nil {
			return nil, errdefs.Invalid("sensitive", "sensitive", "policy %s: sensitive path %q: %v", source, s, err)
		}
	}
	p.sensitive = sens
	for i, r := range f.ReadRoots {
		if !strings.HasPrefix(r, "/") && r != "~" && !strings.HasPrefix(r, "~/") {
			return nil, errdefs.Invalid(fmt.Sprintf("read_roots[%d]", i), "read_roots", "policy %s: read root %q must be absolute or start with ~/", source, r)
		}
	}
	p.readRoots = f.ReadRoots
	seen := map[string]bool{}
	if p.builtin && prefix == "" {
		for _, r := range builtin().rules {
			seen[r.name] = true
		}
	}
	for i, spec := range f.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		if spec.Name == "" {
			return nil, errdefs.Invalid(field, "name", "policy %s: rule %d has no name", source, i+1)
		}
		for _, rp := range reservedPrefixes {
			if prefix == "" && strings.HasPrefix(spec.Name, rp) {
				return nil, errdefs.Invalid(field, "name", "policy %s: rule name %q: names starting with %q are reserved", source, spec.Name, rp)
			}
		}
		name := prefix + spec.Name
		if seen[name] {
			return nil, errdefs.Invalid(field, "name", "policy %s: rule name %q is used twice", source, spec.Name)
		}
		seen[name] = true
		r, err := compileRule(spec, name, i)
		if err != nil {
			e := errdefs.Invalid(field, "rule", "policy %s: rule %q: %v", source, spec.Name, err)
			e.Rule = name
			return nil, e
		}
		r.builtin = prefix != ""
		if skipExamples {
			// The built-in rules are compiled in; TestBuiltinExamples checks
			// their examples, so starting toold need not.
		} else if err := checkExamples(r, spec, field); err != nil {
			err.Msg = fmt.Sprintf("policy %s: %s", source, err.Msg)
			return nil, err
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

// checkExamples checks a rule against its examples.
func checkExamples(r *rule, spec RuleSpec, field string) *errdefs.Error {
	check := func(ex Example, want bool, key string, i int) *errdefs.Error {
		got, err := r.matchExample(ex)
		f := fmt.Sprintf("%s.examples.%s[%d]", field, key, i)
		if err != nil {
			e := errdefs.Invalid(f, "examples", "rule %q: example %s: %v", spec.Name, ex, err)
			e.Rule = r.name
			return e
		}
		if got == want {
			return nil
		}
		verb := "must match but does not"
		if !want {
			verb = "must not match but does"
		}
		e := errdefs.Invalid(f, "examples", "rule %q contradicts its example %s: it %s", spec.Name, ex, verb)
		e.Rule = r.name
		return e
	}
	for i, ex := range spec.Examples.Match {
		if err := check(ex, true, "match", i); err != nil {
			return err
		}
	}
	for i, ex := range spec.Examples.NoMatch {
		if err := check(ex, false, "no_match", i); err != nil {
			return err
		}
	}
	return nil
}

// exampleHome and exampleWorkspace stand for the home and workspace
// directories when examples are checked, so that a policy loads the same
// everywhere.
const (
	exampleHome      = "/home/user"
	exampleWorkspace = "/home/user/project"
)

// matchExample reports whether the rule matches an example.
func (r *rule) matchExample(ex Example) (bool, error) {
	raw := ex.Raw
	tool, op := ex.Tool, ex.Operation
	switch r.kind() {
	case kindCommand:
		line := ex.Command
		if raw != "" {
			line = raw
		}
		if line == "" {
			return false, fmt.Errorf("a commands rule needs a command example")
		}
		if tool != "" && !r.callMatches(tool, op, ex.Args) {
			return false, nil
		}
		pl := shellread.ParseCommandLine(line, exampleHome)
		if len(pl.Problems) > 0 {
			return false, fmt.Errorf("it cannot be parsed: %s", pl.Problems[0].Reason)
		}
		return r.matchLine(pl.Commands, exampleHome), nil
	case kindPath:
		p := ex.Path
		if raw != "" {
			p = raw
		}
		if p == "" {
			return false, fmt.Errorf("a paths rule needs a path example")
		}
		if tool != "" && !r.callMatches(tool, op, ex.Args) {
			return false, nil
		}
		abs := p
		switch {
		case p == "~" || strings.HasPrefix(p, "~/"):
			abs = exampleHome + p[1:]
		case !strings.HasPrefix(p, "/"):
			abs = exampleWorkspace + "/" + p
		}
		abs = path.Clean(abs)
		acc := accRead
		switch {
		case ex.Access == "write":
			acc = accWrite
		case ex.Access == "read":
		case ex.Access != "":
			return false, fmt.Errorf("access %q: want read or write", ex.Access)
		case r.access == accWrite:
			acc = accWrite
		}
		sc := pathScope{ws: exampleWorkspace, homes: []string{exampleHome}}
		return r.pathMatches([]string{abs}, acc, sc), nil
	case kindHost:
		h := ex.Host
		if raw != "" {
			h = raw
		}
		if h == "" {
			return false, fmt.Errorf("a hosts rule needs a host example")
		}
		if tool != "" && !r.callMatches(tool, op, ex.Args) {
			return false, nil
		}
		return r.hostMatches(normalizeHost(h)), nil
	default:
		if raw != "" {
			tool, op, _ = strings.Cut(raw, ".")
		}
		if tool == "" {
			return false, fmt.Errorf("a rule without commands, paths or hosts needs a tool example")
		}
		if op == "" {
			op = tool
		}
		return r.callMatches(tool, op, ex.Args), nil
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
