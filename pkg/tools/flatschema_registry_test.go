package tools_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/dialect"
	"github.com/toold/toold/pkg/tools/web"
	"github.com/toold/toold/pkg/workspace"
)

// hostileValues are argument values (JSON text, some of it not JSON at
// all) a model can send for any property: number forms the flat form must
// not misjudge, strings with NUL, invalid UTF-8 and lone surrogates,
// nested values where a scalar is expected, null.
var hostileValues = []string{
	`1e999`, `-1e999`, `-0`, `-0.0`, `1.0`, `1e2`, `1E2`, `1e-2`, `99999999999999999999999999`,
	`-99999999999999999999999999`, `9223372036854775808`, `18446744073709551616`, `0.1`, `1`, `-1`, `0`,
	`00`, `01`, `1.`, `.5`, `+1`, `0x10`, `NaN`, `Infinity`, `-`, `1e`, `1e+`,
	`""`, `"x"`, `"x "`, `" x"`, `"a\u0000b"`, "\"a\x00b\"", "\"\xff\xfe\"", `"\ud800"`, `"é"`, `"e\u0301"`,
	`"true"`, `"1"`, `"null"`, `"  "`, `null`, `true`, `false`, `{}`, `[]`, `["x"]`, `{"a":1}`, `[1]`, `[null]`,
}

// schemaCases are every operation schema and dialect tool schema of a
// registry holding all the built-in tools and every dialect.
func registrySchemas(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	reg := tools.NewRegistry()
	more := daemon.MoreOptions{Web: web.Options{Search: web.SearchConfig{Provider: "searxng", URL: "http://127.0.0.1:1/"}}}
	if err := reg.Register(daemon.BuiltinTools(ws, tools.Limits{}, authz.Capabilities{}, newTerminal(t, ws), nil, more)...); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterDialect(dialect.All()...); err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, info := range reg.List() {
		out[info.Spec.Name] = info.Schema
		for _, op := range info.Spec.Operations {
			out[info.Spec.Name+"."+op.Name] = op.Schema
		}
	}
	for _, d := range reg.Dialects() {
		for _, dt := range d.Tools {
			out[d.Name+":"+dt.Name] = dt.Schema
		}
	}
	return out
}

// An attack on the flat-schema shortcut through the real argument path:
// for every schema of the registry (built-in tools, their operations and
// every dialect's tools), arguments built from its own properties with
// hostile values, extra keys, keys differing by case or normalization,
// duplicate keys and the whole object sent as a JSON string — the flat
// form never accepts what the compiled schema refuses.
func TestFlatSchemaRegistryAttack(t *testing.T) {
	schemas := registrySchemas(t)
	if len(schemas) < 20 {
		t.Fatalf("only %d schemas in the registry", len(schemas))
	}
	names := make([]string, 0, len(schemas))
	for n := range schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	flat, accepted, tried := 0, 0, 0
	for _, name := range names {
		schema := schemas[name]
		var raw struct {
			Properties map[string]struct {
				Type any   `json:"type"`
				Enum []any `json:"enum"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		_ = json.Unmarshal(schema, &raw)
		valid := func(p string) string {
			ps := raw.Properties[p]
			if len(ps.Enum) > 0 {
				b, _ := json.Marshal(ps.Enum[0])
				return string(b)
			}
			switch ps.Type {
			case "integer", "number":
				return `1`
			case "boolean":
				return `true`
			case "array":
				return `[]`
			case "object":
				return `{}`
			}
			return `"x"`
		}
		var base []string
		for _, r := range raw.Required {
			base = append(base, fmt.Sprintf("%q:%s", r, valid(r)))
		}
		obj := func(extra ...string) string {
			return "{" + strings.Join(append(append([]string{}, base...), extra...), ",") + "}"
		}
		var argsList []string
		argsList = append(argsList, obj(), `{}`, `[]`, `null`, `"x"`, obj(`"zz_extra":1`), obj(`"":1`))
		props := make([]string, 0, len(raw.Properties))
		for p := range raw.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		for _, p := range props {
			vals := append([]string{}, hostileValues...)
			for _, e := range raw.Properties[p].Enum {
				if s, ok := e.(string); ok {
					for _, v := range []string{s + " ", " " + s, strings.ToUpper(s), s + "\u0000", s + "\u200b"} {
						b, _ := json.Marshal(v)
						vals = append(vals, string(b))
					}
				}
			}
			for _, v := range vals {
				argsList = append(argsList, obj(fmt.Sprintf("%q:%s", p, v)),
					// duplicate keys, both orders
					obj(fmt.Sprintf("%q:%s", p, valid(p)), fmt.Sprintf("%q:%s", p, v)),
					obj(fmt.Sprintf("%q:%s", p, v), fmt.Sprintf("%q:%s", p, valid(p))))
			}
			for _, k := range []string{strings.ToUpper(p), strings.ToUpper(p[:1]) + p[1:], p + " ", "\u200b" + p, p + "\u0301", p + "\u0000"} {
				argsList = append(argsList, obj(fmt.Sprintf("%q:%s", k, valid(p))))
			}
		}
		// The whole object as a JSON string (repaired as double-encoded).
		for _, a := range argsList[:len(argsList)/4+1] {
			b, _ := json.Marshal(a)
			argsList = append(argsList, string(b))
		}
		hasFlat, verdict, err := tools.FlatVerdict(schema)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, a := range argsList {
			tried++
			ok, libErr, decErr := verdict(a)
			if decErr != nil {
				continue
			}
			if ok {
				accepted++
				if libErr != nil {
					t.Errorf("%s: the flat form accepts %q, the compiled schema refuses it: %v", name, a, libErr)
				}
			}
		}
		if hasFlat {
			flat++
		}
	}
	t.Logf("%d schemas, %d with a flat form; %d argument sets, %d accepted by the flat form", len(schemas), flat, tried, accepted)
	if flat == 0 || accepted == 0 {
		t.Fatal("the flat form was never used: the attack tried nothing")
	}
}
