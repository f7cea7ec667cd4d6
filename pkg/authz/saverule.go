package authz

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"

	"github.com/toold/toold/pkg/errdefs"
)

// saveMu serializes AppendRule within the process.
var saveMu sync.Mutex

// Savable reports whether scope has a rule form no wider than what the
// person was shown: an offered conversation scope that is not bound to one
// exact call. "This call only", or one exact call's arguments, saved as a
// rule would allow the whole operation.
func (s Scope) Savable() bool { return s.Conversation && s.Arguments == "" }

// RuleFromScope returns the allow rule an approved scope becomes: the
// scope's tool and operation, narrowed by its command prefix, path prefix
// or host, with the approved call as the example it must match. Only a
// Savable scope should become one.
func RuleFromScope(scope Scope, example map[string]any, now time.Time) RuleSpec {
	name := "approved-" + scope.Tool
	if scope.Operation != "" && scope.Operation != scope.Tool {
		name += "-" + scope.Operation
	}
	name += "-" + now.UTC().Format("20060102T150405")
	r := RuleSpec{
		Name:     name,
		Decision: "allow",
		Reason:   fmt.Sprintf("approved by a person on %s: %s", now.UTC().Format(time.RFC3339), scope.Description),
		Tool:     StringList{scope.Tool},
	}
	if scope.Operation != "" {
		r.Operation = StringList{scope.Operation}
	}
	// The approved call is the example the rule must match, in the form
	// its matcher takes.
	ex := Example{Tool: scope.Tool, Operation: scope.Operation, Args: example}
	switch {
	case scope.CommandPrefix != "":
		r.Commands = []string{scope.CommandPrefix}
		cmd, _ := example["command"].(string)
		ex = Example{Command: cmd}
	case scope.PathPrefix != "":
		r.Paths = []string{strings.TrimSuffix(scope.PathPrefix, "/") + "/**"}
		p, _ := example["path"].(string)
		ex = Example{Path: p}
	case scope.Host != "":
		r.Hosts = []string{scope.Host}
		ex = Example{Host: scope.Host}
	}
	r.Examples.Match = []Example{ex}
	return r
}

// AppendRule appends rule to the policy file at path (YAML or TOML, by
// extension; a YAML file keeps its comments) and replaces the file only
// once the result loads — every rule checked against its examples, the
// new one against the approved call — so a bad rule changes nothing. A
// policy file that does not exist yet is created with just the rule. The
// running daemon applies it from its next start.
func AppendRule(path string, rule RuleSpec) error {
	saveMu.Lock()
	defer saveMu.Unlock()
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var next []byte
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		next, err = appendYAML(old, rule)
	case ".toml":
		next, err = appendTOML(old, rule)
	default:
		return errdefs.Invalid("", "format", "policy file %s: unknown format; name it .yaml, .yml or .toml", path)
	}
	if err != nil {
		return err
	}
	format := "yaml"
	if strings.EqualFold(filepath.Ext(path), ".toml") {
		format = "toml"
	}
	if _, err := ParsePolicy(next, format, path); err != nil {
		return fmt.Errorf("the saved rule would not load, so %s was left as it was: %w", path, err)
	}
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".policy-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(next); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// yamlRule is a RuleSpec as written back: only the fields set.
type yamlRule struct {
	Name      string       `yaml:"name" toml:"name"`
	Decision  string       `yaml:"decision" toml:"decision"`
	Reason    string       `yaml:"reason,omitempty" toml:"reason,omitempty"`
	Tool      []string     `yaml:"tool,omitempty" toml:"tool,omitempty"`
	Operation []string     `yaml:"operation,omitempty" toml:"operation,omitempty"`
	Commands  []string     `yaml:"commands,omitempty" toml:"commands,omitempty"`
	Paths     []string     `yaml:"paths,omitempty" toml:"paths,omitempty"`
	Hosts     []string     `yaml:"hosts,omitempty" toml:"hosts,omitempty"`
	Examples  yamlExamples `yaml:"examples" toml:"examples"`
}

type yamlExamples struct {
	Match []yamlExample `yaml:"match" toml:"match"`
}

type yamlExample struct {
	Tool      string         `yaml:"tool,omitempty" toml:"tool,omitempty"`
	Operation string         `yaml:"operation,omitempty" toml:"operation,omitempty"`
	Args      map[string]any `yaml:"args,omitempty" toml:"args,omitempty"`
	Command   string         `yaml:"command,omitempty" toml:"command,omitempty"`
	Path      string         `yaml:"path,omitempty" toml:"path,omitempty"`
	Host      string         `yaml:"host,omitempty" toml:"host,omitempty"`
}

func writable(r RuleSpec) yamlRule {
	w := yamlRule{Name: r.Name, Decision: r.Decision, Reason: r.Reason, Tool: r.Tool, Operation: r.Operation,
		Commands: r.Commands, Paths: r.Paths, Hosts: r.Hosts}
	for _, e := range r.Examples.Match {
		w.Examples.Match = append(w.Examples.Match, yamlExample{Tool: e.Tool, Operation: e.Operation, Args: e.Args, Command: e.Command, Path: e.Path, Host: e.Host})
	}
	return w
}

func appendYAML(old []byte, rule RuleSpec) ([]byte, error) {
	var doc yaml.Node
	if len(bytes.TrimSpace(old)) > 0 {
		if err := yaml.Unmarshal(old, &doc); err != nil {
			return nil, errdefs.Invalid("", "syntax", "policy file: %v", err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errdefs.Invalid("", "syntax", "policy file: the top level is not a mapping")
	}
	var rules *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "rules" {
			rules = root.Content[i+1]
		}
	}
	if rules == nil {
		rules = &yaml.Node{Kind: yaml.SequenceNode}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "rules"}, rules)
	}
	if rules.Kind != yaml.SequenceNode {
		return nil, errdefs.Invalid("", "syntax", "policy file: rules is not a list")
	}
	var n yaml.Node
	if err := n.Encode(writable(rule)); err != nil {
		return nil, err
	}
	rules.Style = 0 // block style, whatever it was
	rules.Content = append(rules.Content, &n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

func appendTOML(old []byte, rule RuleSpec) ([]byte, error) {
	var b bytes.Buffer
	b.Write(old)
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString("\n# Saved from an approval.\n")
	if err := toml.NewEncoder(&b).Encode(struct {
		Rules []yamlRule `toml:"rules"`
	}{[]yamlRule{writable(rule)}}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
