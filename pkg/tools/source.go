package tools

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// MCPSourcePrefix starts the Source of every tool of an MCP server
// ("mcp:NAME").
const MCPSourcePrefix = "mcp:"

// ReplaceSource atomically replaces the tools whose Spec.Source is source
// with ts (none removes them all): a concurrent Resolve sees either the old
// set or the new one, never a gap. Every tool in ts must have that Source.
// It fails, changing nothing, when a spec is invalid or a name is taken by a
// tool of another source.
//
// Order: tools of MCP sources ("mcp:...") are kept after all others, sorted
// by source and then by name, so that a listing does not depend on the
// order in which servers connected or refreshed; the other tools keep their
// registration order.
func (r *Registry) ReplaceSource(source string, ts ...Tool) error {
	if source == "" {
		return fmt.Errorf("ReplaceSource: empty source")
	}
	fresh := make([]*entry, 0, len(ts))
	for _, t := range ts {
		e, err := compileEntry(t)
		if err != nil {
			return err
		}
		if e.spec.Source != source {
			return fmt.Errorf("tool %q has source %q, not %q", e.spec.Name, e.spec.Source, source)
		}
		fresh = append(fresh, e)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	taken := map[string]bool{}
	for _, e := range fresh {
		for _, n := range append([]string{e.spec.Name}, e.spec.Aliases...) {
			if old, ok := r.byName[n]; (ok && old.spec.Source != source) || taken[n] {
				return fmt.Errorf("tool name %q is already registered", n)
			}
			taken[n] = true
		}
	}
	for _, e := range slices.Clone(r.entries) {
		if e.spec.Source == source {
			r.removeLocked(e)
		}
	}
	for _, e := range fresh {
		r.insertLocked(e)
		r.entries = append(r.entries, e)
	}
	slices.SortStableFunc(r.entries, func(a, b *entry) int {
		am, bm := strings.HasPrefix(a.spec.Source, MCPSourcePrefix), strings.HasPrefix(b.spec.Source, MCPSourcePrefix)
		switch {
		case !am && !bm:
			return 0
		case am != bm:
			if am {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.spec.Source, b.spec.Source), cmp.Compare(a.spec.Name, b.spec.Name))
	})
	return nil
}
