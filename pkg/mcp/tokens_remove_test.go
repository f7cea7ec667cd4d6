package mcp_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/mcp/mcptest"
)

// authorize adds name (the OAuth server p's /mcp) to f, has a person
// authorize it, and waits until it is connected with its token stored.
func authorize(t *testing.T, ctx context.Context, f *fixture, p *mcptest.OAuthServer, name string) {
	t.Helper()
	st, err := f.m.Add(ctx, name, mcpconfig.Server{URL: p.Base + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != mcp.StateAuthorizing {
		t.Fatalf("after add: state %v, err %q", st.State, st.Err)
	}
	if page := mcptest.AuthorizeAsPerson(t, st.AuthURL); !strings.Contains(page, "authorization complete") {
		t.Fatalf("the callback page: %s", page)
	}
	waitFor(t, name+" connected after the authorization", func() bool { return status(f.m, name).State == mcp.StateConnected })
}

// Removing a server deletes its stored OAuth token, and a server added
// again under the same name starts unauthorized (a person is asked); a
// toold started without a server in its configuration deletes that
// server's token (removed from the file while toold was stopped), and
// leaves the other files of the directory alone.
func TestRemovedServerLeavesNoToken(t *testing.T) {
	p := mcptest.StartOAuthServer(t)
	dir := filepath.Join(t.TempDir(), "mcp-oauth")
	f := newFixture(t, mcp.Options{TokenDir: dir})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	authorize(t, ctx, f, p, "sec")
	file := filepath.Join(dir, "sec.json")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("no stored token after the authorization: %v", err)
	}
	if err := f.m.Remove(ctx, "sec"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the removed server's token file stays: %v", err)
	}
	st, err := f.m.Add(ctx, "sec", mcpconfig.Server{URL: p.Base + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != mcp.StateAuthorizing || st.AuthURL == "" {
		t.Fatalf("added again under the same name: state %v, auth URL %q; want unauthorized", st.State, st.AuthURL)
	}
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a token file without an authorization: %v", err)
	}

	// Authorized in one toold; the next starts with no servers configured.
	g := newFixture(t, mcp.Options{TokenDir: dir})
	authorize(t, ctx, g, p, "gone")
	if err := g.m.Close(); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, "gone.json")
	if _, err := os.Stat(gone); err != nil {
		t.Fatalf("closing toold removed the token: %v", err)
	}
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newFixture(t, mcp.Options{TokenDir: dir})
	if err := h.m.Start(ctx, map[string]mcpconfig.Server{"kept": {URL: p.Base + "/mcp", Disabled: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gone); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the token of a server no longer configured stays: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another file of the directory was removed: %v", err)
	}
}
