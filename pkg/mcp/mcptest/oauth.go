package mcptest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// OAuthServer is an OAuth-protected MCP server (go-sdk's RequireBearerToken)
// and its authorization server, on one 127.0.0.1 listener: protected
// resource metadata, RFC 8414 metadata, dynamic registration, an
// authorize endpoint that redirects at once (the "person" approves, or
// denies when deny is set), and a token endpoint that checks PKCE and
// refreshes; the client credentials grant takes the client "service-1"
// with the secret "service-secret".
type OAuthServer struct {
	// Base is the server's origin; the MCP endpoint is Base + "/mcp".
	Base string

	mu        sync.Mutex
	deny      bool
	codes     map[string]string // code -> PKCE challenge
	access    map[string]bool   // valid access tokens
	refresh   map[string]bool   // valid refresh tokens
	n         int
	registers int
	refreshes int
	issued    []string // every token handed out
}

func StartOAuthServer(t testing.TB) *OAuthServer {
	p := &OAuthServer{codes: map[string]string{}, access: map[string]bool{}, refresh: map[string]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Base = "http://" + l.Addr().String()
	server := sdk.NewServer(&sdk.Implementation{Name: "guarded", Version: "1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "whoami", Description: "Says who called."}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, struct{}, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "authorized caller"}}}, struct{}{}, nil
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.access[tok] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: p.Base + "/.well-known/oauth-protected-resource/mcp",
	})(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: p.Base + "/mcp", AuthorizationServers: []string{p.Base},
	}))
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": p.Base, "authorization_endpoint": p.Base + "/authorize", "token_endpoint": p.Base + "/token",
			"registration_endpoint": p.Base + "/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": []string{"authorization_code", "refresh_token", "client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic"},
		})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var md map[string]any
		_ = json.NewDecoder(r.Body).Decode(&md)
		p.mu.Lock()
		p.registers++
		p.mu.Unlock()
		md["client_id"] = "client-1"
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, md)
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		back, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "client-1" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		v := url.Values{"state": {q.Get("state")}}
		p.mu.Lock()
		if p.deny {
			v.Set("error", "access_denied")
			v.Set("error_description", "the user said no")
		} else {
			p.n++
			code := fmt.Sprintf("code-%d", p.n)
			p.codes[code] = q.Get("code_challenge")
			v.Set("code", code)
		}
		p.mu.Unlock()
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		p.mu.Lock()
		defer p.mu.Unlock()
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			challenge, ok := p.codes[r.Form.Get("code")]
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(p.codes, r.Form.Get("code"))
		case "client_credentials":
			id, secret, ok := r.BasicAuth()
			if !ok {
				id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
			}
			if id != "service-1" || secret != "service-secret" {
				w.WriteHeader(http.StatusUnauthorized)
				writeJSON(w, map[string]string{"error": "invalid_client"})
				return
			}
		case "refresh_token":
			if !p.refresh[r.Form.Get("refresh_token")] {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]string{"error": "invalid_grant"})
				return
			}
			p.refreshes++
		default:
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		p.n++
		at, rt := fmt.Sprintf("secret-access-%d-x7", p.n), fmt.Sprintf("secret-refresh-%d-x7", p.n)
		p.access[at], p.refresh[rt] = true, true
		p.issued = append(p.issued, at, rt)
		writeJSON(w, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt})
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return p
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Revoke makes the server refuse every access token (and, with refresh,
// every refresh token) it issued.
func (p *OAuthServer) Revoke(refresh bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.access)
	if refresh {
		clear(p.refresh)
	}
}

// Counts returns how many clients registered and how many tokens were refreshed.
func (p *OAuthServer) Counts() (registers, refreshes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.registers, p.refreshes
}

// SetDeny makes the authorization endpoint deny
// (error=access_denied) or approve.
func (p *OAuthServer) SetDeny(deny bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deny = deny
}

// Issued returns every token the server handed out.
func (p *OAuthServer) Issued() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.issued...)
}

// AuthorizeAsPerson opens the URL toold shows, as a person's browser
// would: the authorization server redirects to toold's loopback listener.
func AuthorizeAsPerson(t testing.TB, authURL string) string {
	t.Helper()
	resp, err := http.Get(authURL)
	if err != nil {
		t.Fatalf("following the authorization URL: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
