package main

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
)

// TestGrants lists and revokes the grants of a real toold.
func TestGrants(t *testing.T) {
	t.Parallel()
	d, pol, _ := startGuarded(t)

	// Without the operator credential toolctl sees no other conversation's
	// grants, and says what it would need.
	r := runAt(t, d.Socket, "grants")
	r.check(t, exitUsage, nil, []string{"PermissionDenied", "operator credential", "TOOLD_STATE_DIR"})
	r = runAsOperator(t, d, "grants")
	r.check(t, exitOK, nil, []string{"no grants\n"})
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}

	conv := authz.Scope{ID: "conv", Conversation: true, Tool: "guarded", Operation: "guarded", PathPrefix: "src/", TTL: 5 * time.Minute, Description: "guarded under src/ for 5m"}
	g1, _ := pol.Grant("c1", conv, false, 5*time.Minute, "toolctl/test")
	g2, _ := pol.Grant("c2", authz.Scope{Tool: "file_operations", Operation: "write_file", Description: "file_operations.write_file once, granted through user_collaboration"}, true, time.Minute, "user_collaboration")

	r = runAsOperator(t, d, "grants")
	r.check(t, exitOK, nil, nil)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and two rows:\n%s", r.stdout)
	}
	for i, want := range [][]string{
		{"ID", "CONVERSATION", "SCOPE", "ONCE", "EXPIRES", "GRANTED BY"},
		{g1.ID, "c1", "guarded under src/ for 5m", "no", "in ", "toolctl/test"},
		{g2.ID, "c2", "file_operations.write_file once, granted through user_collaboration", "yes", "in ", "user_collaboration"},
	} {
		rest := lines[i]
		for _, cell := range want {
			j := strings.Index(rest, cell)
			if j < 0 {
				t.Errorf("row %d lacks %q in order:\n%s", i, cell, r.stdout)
				break
			}
			rest = rest[j+len(cell):]
		}
	}
	if i := strings.Index(lines[0], "SCOPE"); strings.Index(lines[1], "guarded under") != i {
		t.Errorf("columns not aligned:\n%s", r.stdout)
	}

	r = runAsOperator(t, d, "grants", "--conversation", "c2", "--json")
	r.check(t, exitOK, nil, nil)
	resp := &pb.ListGrantsResponse{}
	if err := protojson.Unmarshal([]byte(r.stdout), resp); err != nil {
		t.Fatalf("stdout is not a ListGrantsResponse: %v\n%s", err, r.stdout)
	}
	if len(resp.GetGrants()) != 1 || resp.GetGrants()[0].GetGrantId() != g2.ID || !resp.GetGrants()[0].GetOnce() {
		t.Errorf("grants of c2: %v", resp)
	}
	r = runAsOperator(t, d, "grants", "--conversation", "c3")
	r.check(t, exitOK, nil, []string{"no grants in conversation c3\n"})

	r = runAsOperator(t, d, "grants", "revoke", g1.ID)
	r.check(t, exitOK, []string{"revoked " + g1.ID + "\n"}, nil)
	if gs := pol.Grants(""); len(gs) != 1 || gs[0].ID != g2.ID {
		t.Errorf("grants after revoking %s: %v", g1.ID, gs)
	}
	r = runAsOperator(t, d, "grants", "revoke", g1.ID)
	r.check(t, exitFailure, nil, []string{`toolctl: revoke grant: no grant "` + g1.ID + `" (it may have expired or been used)`})

	for _, args := range [][]string{{"grants", "revoke"}, {"grants", "revoke", "a", "b"}, {"grants", "extra"}} {
		r = runAt(t, d.Socket, args...)
		r.check(t, exitUsage, nil, nil)
	}
}
