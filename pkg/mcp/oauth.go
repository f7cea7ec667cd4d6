package mcp

import (
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/tools"
)

// oauthFlow is the OAuth client of one streamable HTTP server: it gives
// the SDK's transport the stored (or freshly obtained) token, refreshes it,
// and, when the server still answers 401, runs the authorization-code flow
// (PKCE, client ID metadata document / pre-registered client / dynamic
// registration, RFC 9207 iss) with go-sdk's auth.AuthorizationCodeHandler.
// The person authorizes by opening the URL that Status.AuthURL, `toolctl
// mcp login` and the log show; the authorization server redirects their
// browser to a loopback listener toold opens for the flow on 127.0.0.1.
//
// It implements auth.OAuthHandler. Tokens are kept in store (a 0600 file in
// toold's state directory, which commands cannot read) and never logged.
type oauthFlow struct {
	u      *upstream
	cfg    mcpconfig.OAuth // ClientSecret and ClientMetadataURL expanded
	url    string          // the server's URL, expanded
	client *http.Client    // for metadata, registration, token requests
	store  *tokenStore
	log    *slog.Logger

	mu     sync.Mutex
	limit  *handshakeLimit    // of the current attempt; paused while a person is asked
	ts     oauth2.TokenSource // nil until a token exists
	rec    tokenRecord        // what refreshes ts (ClientID, TokenURL...)
	forced string             // access token a forced refresh returned
	failed string             // why the last authorization failed; "" after a success
}

// newOAuthFlow returns the flow of u, with the token stored for the same
// URL when there is one.
func newOAuthFlow(u *upstream, cfg mcpconfig.OAuth, endpoint string, client *http.Client) *oauthFlow {
	f := &oauthFlow{
		u: u, cfg: cfg, url: endpoint, client: client,
		store: newTokenStore(u.m.opts.TokenDir, u.name),
		log:   u.m.opts.Logger.With("mcp_server", u.name),
	}
	rec, err := f.store.load()
	switch {
	case err != nil:
		f.log.Warn("stored OAuth token unreadable; authorizing again", "err", err)
	case rec != nil && rec.ServerURL == endpoint && rec.Token != nil:
		f.rec = *rec
		f.ts = f.persisting(rec.oauth2Config().TokenSource(f.refreshContext(), rec.Token.token()), rec.Token.AccessToken)
	}
	return f
}

// oauthHandler returns the OAuth client of a streamable HTTP server, kept
// across its connections; nil when the entry sends its own Authorization
// header (a static token is the operator's choice, not a 401 to act on).
func (u *upstream) oauthHandler(hc *http.Client, endpoint string, limit *handshakeLimit) (auth.OAuthHandler, error) {
	for k := range u.cfg.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil, nil
		}
	}
	var cfg mcpconfig.OAuth
	if u.cfg.OAuth != nil {
		cfg = *u.cfg.OAuth
		var x expander
		cfg.ClientID = x.expand(cfg.ClientID)
		cfg.ClientSecret = x.expand(cfg.ClientSecret)
		cfg.ClientMetadataURL = x.expand(cfg.ClientMetadataURL)
		if err := x.err(); err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
	}
	if cfg.Grant == mcpconfig.GrantClientCredentials {
		// No person and nothing to store: the client's credentials get a
		// new token whenever the server asks for one.
		return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: cfg.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: cfg.ClientSecret}},
			HTTPClient:  hc,
		})
	}
	u.mu.Lock()
	f := u.oauth
	u.mu.Unlock()
	if f == nil || f.url != endpoint || !slices.Equal(f.cfg.Scopes, cfg.Scopes) || f.cfg.ClientID != cfg.ClientID || f.cfg.ClientSecret != cfg.ClientSecret || f.cfg.ClientMetadataURL != cfg.ClientMetadataURL {
		f = newOAuthFlow(u, cfg, endpoint, hc)
		u.mu.Lock()
		u.oauth = f
		u.mu.Unlock()
	}
	f.mu.Lock()
	f.limit = limit
	f.mu.Unlock()
	return f, nil
}

// setAuthorizing shows (or, with "", clears) the URL a person must open,
// putting the server in StateAuthorizing meanwhile.
func (u *upstream) setAuthorizing(authURL string) {
	if authURL != "" {
		// Waiting for a person is the end of a first attempt as far as
		// Start and Add wait: they return, showing the URL.
		defer u.markFirst()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if authURL != "" {
		u.authPrev = u.st.State
		u.st.State, u.st.Since, u.st.AuthURL = StateAuthorizing, time.Now(), authURL
		return
	}
	if u.st.State == StateAuthorizing {
		u.st.State, u.st.Since = u.authPrev, time.Now()
	}
	u.st.AuthURL = ""
}

// TokenSource implements auth.OAuthHandler.
func (f *oauthFlow) TokenSource(context.Context) (oauth2.TokenSource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ts, nil
}

// Authorize implements auth.OAuthHandler: a 401 to a request that carried
// a token toold can refresh is answered by refreshing it once; otherwise (or
// when the refreshed token is refused too) a person authorizes again.
func (f *oauthFlow) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if resp.StatusCode == http.StatusUnauthorized && f.refresh(ctx, req) {
		_ = resp.Body.Close()
		f.setFailed("")
		return nil
	}
	err := f.authorize(ctx, req, resp)
	f.u.mu.Lock()
	if err != nil {
		// Shown by listings (and toolctl mcp login) while the session,
		// when there is one, stays up unauthorized.
		f.u.st.Err = err.Error()
	} else if f.u.st.State == StateConnected {
		f.u.st.Err = ""
	}
	f.u.mu.Unlock()
	if err != nil {
		f.setFailed(err.Error())
		return err
	}
	f.setFailed("")
	f.log.Info("MCP server authorized")
	return nil
}

func (f *oauthFlow) setFailed(msg string) {
	f.mu.Lock()
	f.failed = msg
	f.mu.Unlock()
}

// authFailure returns why the server's last OAuth authorization failed,
// or "" when it did not (or the server has no OAuth client).
func (u *upstream) authFailure() string {
	u.mu.Lock()
	f := u.oauth
	u.mu.Unlock()
	if f == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// authorize runs the authorization-code flow with a person.
func (f *oauthFlow) authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.cfg.CallbackPort)))
	if err != nil {
		_ = resp.Body.Close()
		return &authError{fmt.Sprintf("OAuth: cannot listen for the authorization's redirect: %v", err)}
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return f.askPerson(ctx, ln, args.URL)
		},
		Client:              f.client,
		RequestRefreshToken: true,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			return f.obtained(ctx, c, t)
		},
		// Registration: a client ID metadata document where the
		// authorization server supports one, else the pre-registered
		// client, else dynamic registration (the SDK tries them in
		// this order).
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			ClientName:              "toold",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
	}
	if f.cfg.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: f.cfg.ClientMetadataURL}
	}
	if f.cfg.ClientID != "" {
		hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: f.cfg.ClientID}
		if f.cfg.ClientSecret != "" {
			hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: f.cfg.ClientSecret}
		}
	}
	if len(f.cfg.Scopes) > 0 {
		scopes := f.cfg.Scopes
		hc.ScopeFilter = func([]string) []string { return scopes }
	} else {
		// A step-up authorization (403 insufficient_scope) asks for the
		// scopes granted before as well as the new ones (SEP-2350): the
		// SDK's handler is made per authorization, so toold keeps them.
		f.mu.Lock()
		granted := slices.Clone(f.rec.Scopes)
		f.mu.Unlock()
		hc.ScopeFilter = func(discovered []string) []string {
			out := slices.Clone(granted)
			for _, s := range discovered {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			return out
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		_ = resp.Body.Close()
		return &authError{fmt.Sprintf("OAuth: %v", err)}
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		var ae *authError
		if errors.As(err, &ae) {
			return err
		}
		return &authError{fmt.Sprintf("OAuth authorization failed: %v", err)}
	}
	return nil
}

// refresh refreshes the token once after the server refused it: it
// reports whether a new token is in place. A token a forced refresh
// returned is not refreshed again when refused (a person must authorize).
func (f *oauthFlow) refresh(ctx context.Context, req *http.Request) bool {
	f.mu.Lock()
	rec := f.rec
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	if f.ts == nil || rec.Token == nil || rec.Token.RefreshToken == "" || (f.forced != "" && sent == f.forced) {
		f.mu.Unlock()
		return false
	}
	f.mu.Unlock()
	stale := rec.Token.token()
	stale.AccessToken, stale.Expiry = "", time.Unix(1, 0) // makes oauth2 refresh
	tok, err := rec.oauth2Config().TokenSource(context.WithValue(ctx, oauth2.HTTPClient, f.client), stale).Token()
	if err != nil {
		f.log.Warn("refreshing the OAuth token failed; a person must authorize again", "err", redactErr(err))
		return false
	}
	f.mu.Lock()
	f.forced = tok.AccessToken
	f.mu.Unlock()
	f.save(rec, tok)
	f.mu.Lock()
	f.ts = f.persisting(rec.oauth2Config().TokenSource(f.refreshContext(), tok), tok.AccessToken)
	f.mu.Unlock()
	f.log.Info("OAuth token refreshed after the server refused it")
	return true
}

// obtained stores the token an authorization returned and returns the
// source that refreshes it.
func (f *oauthFlow) obtained(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
	rec := tokenRecord{
		ServerURL: f.url, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		TokenURL: c.Endpoint.TokenURL, AuthStyle: int(c.Endpoint.AuthStyle), Scopes: c.Scopes,
	}
	f.save(rec, t)
	ts := f.persisting(c.TokenSource(ctx, t), t.AccessToken)
	f.mu.Lock()
	f.forced = ""
	f.ts = ts
	f.mu.Unlock()
	return ts, nil
}

// save records tok with rec's client, in memory and in the store.
func (f *oauthFlow) save(rec tokenRecord, tok *oauth2.Token) {
	rec.Token = storedToken(tok, rec.Token)
	f.mu.Lock()
	f.rec = rec
	f.mu.Unlock()
	if err := f.store.save(&rec); err != nil {
		f.log.Warn("storing the OAuth token failed; toold will ask again after a restart", "err", err)
	}
}

// persisting wraps ts so a token it refreshes is stored.
func (f *oauthFlow) persisting(ts oauth2.TokenSource, current string) oauth2.TokenSource {
	return &savingSource{f: f, ts: ts, last: current}
}

func (f *oauthFlow) refreshContext() context.Context {
	// oauth2 keeps this context for every later refresh: it must outlive
	// the request that authorized.
	return context.WithValue(context.Background(), oauth2.HTTPClient, f.client)
}

// savingSource stores each new token its source returns.
type savingSource struct {
	f    *oauthFlow
	ts   oauth2.TokenSource
	mu   sync.Mutex
	last string
}

// Token implements oauth2.TokenSource.
func (s *savingSource) Token() (*oauth2.Token, error) {
	t, err := s.ts.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	changed := t.AccessToken != s.last
	s.last = t.AccessToken
	s.mu.Unlock()
	if changed {
		s.f.mu.Lock()
		rec := s.f.rec
		s.f.mu.Unlock()
		s.f.save(rec, t)
		s.f.log.Info("OAuth token refreshed")
	}
	return t, nil
}

// askPerson shows the authorization URL (Status.AuthURL, the log) and
// waits for the authorization server to redirect the person's browser to
// ln, for ctx, or for the manager's AuthTimeout. The handshake's time
// limit is paused meanwhile.
func (f *oauthFlow) askPerson(ctx context.Context, ln net.Listener, authURL string) (*auth.AuthorizationResult, error) {
	want := ""
	if pu, err := url.Parse(authURL); err == nil {
		want = pu.Query().Get("state")
	}
	got := make(chan callback, 1)
	srv := &http.Server{
		Handler:           callbackHandler(want, got),
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		// Let the page of the redirect be written, then close.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
		<-served
	}()

	f.mu.Lock()
	limit := f.limit
	f.mu.Unlock()
	limit.pause()
	defer limit.resume()
	// Logged before the state shows it: whoever sees the URL in the
	// status finds it in the log too.
	f.log.Warn("MCP server needs OAuth authorization: open the URL in a browser (toolctl mcp login "+f.u.name+" shows it and waits)", "url", authURL)
	f.u.setAuthorizing(authURL)
	defer f.u.setAuthorizing("")

	timeout := f.u.m.opts.AuthTimeout
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case cb := <-got:
		if cb.err != "" {
			msg := "authorization denied: " + cb.err
			if cb.desc != "" {
				msg += " (" + tools.Clip(cb.desc, 200) + ")"
			}
			f.log.Warn("MCP server's OAuth authorization was denied", "error", cb.err, "description", tools.Clip(cb.desc, 200))
			return nil, &authError{msg + "; run toolctl mcp login " + f.u.name + " to try again"}
		}
		return &auth.AuthorizationResult{Code: cb.code, State: cb.state, Iss: cb.iss}, nil
	case <-t.C:
		return nil, &authError{fmt.Sprintf("nobody completed the OAuth authorization within %s; run toolctl mcp login %s", timeout, f.u.name)}
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// callback is what the authorization server's redirect carried.
type callback struct {
	code, state, iss string
	err, desc        string
}

// callbackHandler answers the redirect at /callback. Only a redirect with
// the flow's state counts; others get 400 and change nothing.
func callbackHandler(state string, got chan<- callback) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/callback" || q.Get("state") == "" || q.Get("state") != state {
			http.Error(w, "toold: not the redirect of a pending authorization", http.StatusBadRequest)
			return
		}
		cb := callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss"), err: q.Get("error"), desc: q.Get("error_description")}
		if cb.err == "" && cb.code == "" {
			cb.err = "invalid_request"
			cb.desc = "the redirect carried neither a code nor an error"
		}
		msg := "toold: authorization complete. You can close this page."
		if cb.err != "" {
			msg = "toold: authorization failed: " + cb.err
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			msg = "toold: this authorization was already answered"
		}
		// The page is written before the flow goes on, so the browser
		// gets it before the listener closes.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>toold</title><p>%s</p>\n", html.EscapeString(msg))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if first {
			got <- cb
		}
	})
}

// authError is an authorization failure told as is: connect reports it
// without the SDK's wrapping.
type authError struct{ msg string }

func (e *authError) Error() string { return e.msg }

// redactErr keeps an oauth2 error's code and drops the response body,
// which may echo a token.
func redactErr(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return "token endpoint: " + re.ErrorCode
		}
		if re.Response != nil {
			return "token endpoint: " + re.Response.Status
		}
	}
	return err.Error()
}

// handshakeLimit is the time limit of one connection attempt, which
// pauses while a person is asked to authorize.
type handshakeLimit struct {
	d    time.Duration
	fire func()

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func (l *handshakeLimit) start() { l.resume() }

// pause stops the clock; resume starts it again with the whole budget.
func (l *handshakeLimit) pause() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.t != nil {
		l.t.Stop()
	}
}

func (l *handshakeLimit) resume() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t = time.AfterFunc(l.d, l.fire)
	}
}

// stop ends the limit for good (the handshake is over).
func (l *handshakeLimit) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	if l.t != nil {
		l.t.Stop()
	}
}
