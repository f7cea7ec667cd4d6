package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/mcp/mcptest"
)

// lockedBuffer is a log sink tests read while toold writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A real OAuth-protected MCP server: toold gets 401, shows the URL (status,
// log), a person follows it, the call succeeds; the token is stored 0600
// and a new toold uses it without asking; a refused token is refreshed; a
// denied authorization leaves the server unavailable with the reason; no
// token reaches the log or the status.
func TestOAuth(t *testing.T) {
	p := mcptest.StartOAuthServer(t)
	dir := filepath.Join(t.TempDir(), "mcp-oauth")
	logs := &lockedBuffer{}
	f := newFixture(t, mcp.Options{TokenDir: dir, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	st, err := f.m.Add(ctx, "sec", mcpconfig.Server{URL: p.Base + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != mcp.StateAuthorizing || !strings.HasPrefix(st.AuthURL, p.Base+"/authorize?") {
		t.Fatalf("after add: state %v, auth URL %q, err %q", st.State, st.AuthURL, st.Err)
	}
	if !strings.Contains(logs.String(), "needs OAuth authorization") {
		t.Fatalf("the log does not show the URL:\n%s", logs)
	}
	if page := mcptest.AuthorizeAsPerson(t, st.AuthURL); !strings.Contains(page, "authorization complete") {
		t.Fatalf("the callback page: %s", page)
	}
	testenvPoll(t, logs, "connected after the authorization", func() bool { return status(f.m, "sec").State == mcp.StateConnected })
	if s := status(f.m, "sec"); s.AuthURL != "" {
		t.Fatalf("auth URL still shown: %q", s.AuthURL)
	}
	end, _ := f.call(ctx, "sec__whoami", `{}`)
	if end.Err != nil || !strings.Contains(endText(end), "authorized caller") {
		t.Fatalf("call after authorization: %v %q", end.Err, endText(end))
	}
	if reg, _ := p.Counts(); reg != 1 {
		t.Fatalf("dynamic registrations: %d", reg)
	}

	file := filepath.Join(dir, "sec.json")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", fi.Mode())
	}

	// The server refuses the token: toold refreshes it and the call goes
	// through, with no person asked.
	p.Revoke(false)
	end, _ = f.call(ctx, "sec__whoami", `{}`)
	if end.Err != nil || !strings.Contains(endText(end), "authorized caller") {
		t.Fatalf("call with a refused token: %v %q", end.Err, endText(end))
	}
	if _, ref := p.Counts(); ref != 1 {
		t.Fatalf("refreshes: %d", ref)
	}

	// A new toold with the same state directory uses the stored token.
	g := newFixture(t, mcp.Options{TokenDir: dir})
	if st, err := g.m.Add(ctx, "sec", mcpconfig.Server{URL: p.Base + "/mcp"}); err != nil || st.State != mcp.StateConnected {
		t.Fatalf("restart with the stored token: %v, %v %q", err, st.State, st.Err)
	}
	end, _ = g.call(ctx, "sec__whoami", `{}`)
	if end.Err != nil {
		t.Fatalf("call after restart: %v", end.Err)
	}
	if err := g.m.Close(); err != nil {
		t.Fatal(err)
	}

	// Every token is refused and the person denies: the call ends
	// UNAVAILABLE saying so.
	p.Revoke(true)
	p.SetDeny(true)
	type result struct {
		err error
	}
	done := make(chan result, 1)
	go func() {
		end, _ := f.call(ctx, "sec__whoami", `{}`)
		done <- result{end.Err}
	}()
	waitFor(t, "a new authorization URL", func() bool { return status(f.m, "sec").State == mcp.StateAuthorizing })
	if page := mcptest.AuthorizeAsPerson(t, status(f.m, "sec").AuthURL); !strings.Contains(page, "access_denied") {
		t.Fatalf("the callback page of a denial: %s", page)
	}
	r := <-done
	if !errors.Is(r.err, errdefs.ErrUnavailable) || !strings.Contains(r.err.Error(), "authorization denied: access_denied (the user said no)") || !strings.Contains(r.err.Error(), "toolctl mcp login sec") {
		t.Fatalf("call after a denial: %v", r.err)
	}

	// No token in the log, the status, or the error.
	issued := p.Issued()
	shown := logs.String() + fmt.Sprintf("%+v", f.m.List()) + r.err.Error()
	for _, tok := range issued {
		if strings.Contains(shown, tok) {
			t.Fatalf("token %s shown:\n%s", tok, shown)
		}
	}
	if len(issued) < 4 {
		t.Fatalf("tokens issued: %v", issued)
	}
}

func testenvPoll(t *testing.T, logs *lockedBuffer, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s; log:\n%s", what, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The client credentials grant: no person, the server connects at once
// and a refused token is replaced with the credentials.
func TestOAuthClientCredentials(t *testing.T) {
	p := mcptest.StartOAuthServer(t)
	f := newFixture(t, mcp.Options{TokenDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	entry := mcpconfig.Server{URL: p.Base + "/mcp", OAuth: &mcpconfig.OAuth{ClientID: "service-1", ClientSecret: "service-secret", Grant: mcpconfig.GrantClientCredentials}}
	st, err := f.m.Add(ctx, "svc", entry)
	if err != nil || st.State != mcp.StateConnected {
		t.Fatalf("add: %v, %v %q", err, st.State, st.Err)
	}
	p.Revoke(true)
	end, _ := f.call(ctx, "svc__whoami", `{}`)
	if end.Err != nil || !strings.Contains(endText(end), "authorized caller") {
		t.Fatalf("call with a refused token: %v %q", end.Err, endText(end))
	}
	if reg, _ := p.Counts(); reg != 0 {
		t.Fatalf("registrations: %d", reg)
	}

	entry.OAuth.ClientSecret = "wrong"
	st, err = f.m.Add(ctx, "bad", entry)
	if err != nil || st.State != mcp.StateBackoff || !strings.Contains(st.Err, "invalid_client") {
		t.Fatalf("wrong secret: %v, %v %q", err, st.State, st.Err)
	}
}
