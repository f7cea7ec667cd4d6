package authz

import "testing"

// TestAddDedupes checks that add records each facet once, whether the
// keys seen are still held in place or already in the map.
func TestAddDedupes(t *testing.T) {
	j := &judgement{}
	j.keys = j.keysBuf[:0]
	for round := range 3 {
		for i := range 10 {
			j.add(&facet{kind: facetPath, acc: accRead, cmd: -1, given: string(rune('a' + i))})
		}
		if len(j.facets) != 10 {
			t.Fatalf("round %d: %d facets, want 10", round, len(j.facets))
		}
	}
	// Commands are never merged.
	j.add(&facet{kind: facetCommand, cmd: 0})
	j.add(&facet{kind: facetCommand, cmd: 0})
	if len(j.facets) != 12 {
		t.Errorf("%d facets, want 12", len(j.facets))
	}
	// Below the map's threshold too.
	k := &judgement{}
	k.keys = k.keysBuf[:0]
	for range 2 {
		k.add(&facet{kind: facetPath, acc: accRead, cmd: -1, given: "x", lexical: "/ws/x"})
		k.add(&facet{kind: facetPath, acc: accWrite, cmd: -1, given: "x", lexical: "/ws/x"})
	}
	if len(k.facets) != 2 || k.seen != nil {
		t.Errorf("%d facets (map %v), want 2 without a map", len(k.facets), k.seen != nil)
	}
}
