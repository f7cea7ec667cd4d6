package dialect

import (
	"embed"
	"encoding/json"

	"github.com/toold/toold/pkg/tools"
)

// upstreamFS holds the agents' own tool definitions, extracted from the
// pinned sources by upstream/extract.py (codex's transcribed by hand); see
// upstream/README.md. Apache-2.0 and MIT texts are embedded with
// attribution (NOTICE); Claude Code's file holds facts only.
//
//go:embed upstream/*.json
var upstreamFS embed.FS

// Upstream is one agent's published tool definitions, as checked in.
type Upstream struct {
	// Dialect is the dialect the definitions belong to.
	Dialect string `json:"dialect"`
	// Source names the repository, commit (or package version) and files.
	Source string `json:"source"`
	// License is the source's license.
	License string `json:"license"`
	// Tools are the definitions, in the source's order.
	Tools []UpstreamTool `json:"tools"`
}

// UpstreamTool is one tool as its agent defines it. Description is empty
// where the source's text is not reproduced (Claude Code's tools).
type UpstreamTool struct {
	Name string `json:"name"`
	// Kind is "custom" for a freeform tool (codex's apply_patch: the model
	// sends raw text, which the dialect takes as "input"), empty for a
	// function.
	Kind        string          `json:"kind,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// UpstreamOf returns the checked-in definitions dialect name follows; false
// when none are checked in.
func UpstreamOf(name string) (Upstream, bool) {
	b, err := upstreamFS.ReadFile("upstream/" + name + ".json")
	if err != nil {
		return Upstream{}, false
	}
	var u Upstream
	if err := json.Unmarshal(b, &u); err != nil {
		panic("dialect upstream " + name + ": " + err.Error()) // caught by the package's tests
	}
	return u, true
}

// adopt gives d's tools their agent's own descriptions and schemas where
// the checked-in definitions have them: the text the agent's model was
// trained on, not a copy kept by hand.
func adopt(d tools.Dialect) tools.Dialect {
	u, ok := UpstreamOf(d.Name)
	if !ok {
		return d
	}
	byName := map[string]UpstreamTool{}
	for _, t := range u.Tools {
		byName[t.Name] = t
	}
	for i := range d.Tools {
		t, ok := byName[d.Tools[i].Name]
		if !ok {
			continue
		}
		if t.Description != "" && t.Kind != "custom" { // a freeform tool's text says "not JSON": the dialect's own
			d.Tools[i].Description = t.Description
		}
		d.Tools[i].Schema = schema(string(t.Parameters))
	}
	return d
}
