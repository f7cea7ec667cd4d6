package dialect_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/dialect"
)

// leftOut are upstream tools a dialect deliberately does not present (not
// even as unavailable), with why; docs/dialects.md lists them too.
var leftOut = map[string]string{}

type jsonSchema struct {
	Type        any                        `json:"type"`
	Description *string                    `json:"description"`
	Enum        []any                      `json:"enum"`
	Properties  map[string]json.RawMessage `json:"properties"`
	Required    []string                   `json:"required"`
}

func parseSchema(t *testing.T, where string, b []byte) jsonSchema {
	t.Helper()
	var s jsonSchema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v: %s", where, err, b)
	}
	return s
}

// Each dialect's listing — what ListTools, toolctl and the MCP server
// present — is its agent's published definition, as checked in under
// upstream/ from the pinned source: every upstream tool is listed or said
// to be unavailable, and a listed tool has the agent's name, description
// (where the source's text may be reproduced), parameter names, types,
// enums, required parameters and parameter descriptions. A newer source
// extracted into upstream/ shows here as the tools and parameters that
// changed.
func TestDialectsFollowUpstream(t *testing.T) {
	reg := registry(t)
	for _, d := range dialect.All() {
		t.Run(d.Name, func(t *testing.T) {
			raw, err := os.ReadFile("upstream/" + d.Name + ".json")
			if err != nil {
				t.Fatalf("no checked-in definitions: %v", err)
			}
			var up dialect.Upstream
			if err := json.Unmarshal(raw, &up); err != nil {
				t.Fatal(err)
			}
			if up.Dialect != d.Name || up.Source == "" || up.License == "" {
				t.Fatalf("upstream header %q %q %q", up.Dialect, up.Source, up.License)
			}
			_, infos, off, err := reg.DialectListing(d.Name)
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]tools.Info{}
			for _, in := range infos {
				listed[in.Spec.Name] = in
			}
			for _, u := range up.Tools {
				in, ok := listed[u.Name]
				if !ok {
					if !slices.ContainsFunc(off, func(x tools.Unavailable) bool { return x.Name == u.Name }) && leftOut[d.Name+"."+u.Name] == "" {
						t.Errorf("%s: neither listed nor unavailable", u.Name)
					}
					continue
				}
				if u.Description != "" && u.Kind != "custom" && in.Spec.Description != u.Description {
					t.Errorf("%s: description\n got %q\nwant %q", u.Name, in.Spec.Description, u.Description)
				}
				compareSchema(t, u.Name, parseSchema(t, u.Name+" listed", in.Schema), parseSchema(t, u.Name+" upstream", u.Parameters))
			}
		})
	}
}

// compareSchema compares a listed schema's top level with the upstream
// one's: parameter names, types, enums, descriptions (where upstream has
// one) and the required list.
func compareSchema(t *testing.T, tool string, got, want jsonSchema) {
	t.Helper()
	names := func(m map[string]json.RawMessage) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	if g, w := names(got.Properties), names(want.Properties); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: parameters %v, want %v", tool, g, w)
	}
	g, w := slices.Clone(got.Required), slices.Clone(want.Required)
	sort.Strings(g)
	sort.Strings(w)
	if strings.Join(g, ",") != strings.Join(w, ",") {
		t.Errorf("%s: required %v, want %v", tool, g, w)
	}
	for k, wraw := range want.Properties {
		graw, ok := got.Properties[k]
		if !ok {
			continue
		}
		gp, wp := parseSchema(t, tool+"."+k, graw), parseSchema(t, tool+"."+k, wraw)
		if !reflect.DeepEqual(gp.Type, wp.Type) {
			t.Errorf("%s.%s: type %v, want %v", tool, k, gp.Type, wp.Type)
		}
		if wp.Enum != nil && !reflect.DeepEqual(gp.Enum, wp.Enum) {
			t.Errorf("%s.%s: enum %v, want %v", tool, k, gp.Enum, wp.Enum)
		}
		if wp.Description != nil && (gp.Description == nil || *gp.Description != *wp.Description) {
			t.Errorf("%s.%s: description %v, want %q", tool, k, deref(gp.Description), *wp.Description)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}

// Every parameter of every tool a dialect runs is understood: sent alone
// (with the required ones), it is mapped, dropped with a reason, or
// refused with what to do — never "unknown argument" from toold's own
// tool, which would mean the mapping forgot it.
func TestDialectsMapEveryParameter(t *testing.T) {
	reg := registry(t)
	sample := func(p json.RawMessage) any {
		var s jsonSchema
		_ = json.Unmarshal(p, &s)
		switch s.Type {
		case "string":
			if len(s.Enum) > 0 {
				return s.Enum[0]
			}
			return "a.txt"
		case "number", "integer":
			return json.Number("2")
		case "boolean":
			return false
		case "array":
			return []any{}
		case "object":
			return map[string]any{}
		}
		return "x"
	}
	for _, d := range dialect.All() {
		for _, dt := range d.Tools {
			if !dt.Available() {
				continue
			}
			s := parseSchema(t, dt.Name, dt.Schema)
			for k, p := range s.Properties {
				args := map[string]any{}
				for _, r := range s.Required {
					args[r] = sample(s.Properties[r])
				}
				args[k] = sample(p)
				target, err := reg.ResolveIn(d.Name, dt.Name, args)
				if err == nil {
					_, err = target.Prepare(args)
				}
				if err != nil && strings.Contains(err.Error(), "unknown argument") {
					t.Errorf("%s %s with %q: %v", d.Name, dt.Name, k, err)
				}
			}
		}
	}
}
