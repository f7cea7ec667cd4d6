package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// tokenRecord is what toold keeps of one server's authorization: the
// client it authorized as and the token, so a restart refreshes instead of
// asking a person again.
type tokenRecord struct {
	// ServerURL is the MCP server's URL the token is for; a record for
	// another URL is ignored.
	ServerURL    string       `json:"server_url"`
	ClientID     string       `json:"client_id"`
	ClientSecret string       `json:"client_secret,omitempty"`
	TokenURL     string       `json:"token_url"`
	AuthStyle    int          `json:"auth_style,omitempty"`
	Scopes       []string     `json:"scopes,omitempty"`
	Token        *tokenFields `json:"token"`
}

// tokenFields is an oauth2.Token as stored.
type tokenFields struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

func (t *tokenFields) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry}
}

// storedToken converts t; a refresh that returned no refresh token keeps
// the previous one (RFC 6749 §6).
func storedToken(t *oauth2.Token, prev *tokenFields) *tokenFields {
	out := &tokenFields{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry}
	if out.RefreshToken == "" && prev != nil {
		out.RefreshToken = prev.RefreshToken
	}
	return out
}

func (r *tokenRecord) oauth2Config() *oauth2.Config {
	return &oauth2.Config{
		ClientID: r.ClientID, ClientSecret: r.ClientSecret, Scopes: r.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: r.TokenURL, AuthStyle: oauth2.AuthStyle(r.AuthStyle)},
	}
}

// tokenStore keeps one server's record in DIR/NAME.json (DIR 0700, the
// file 0600, replaced atomically). An empty dir keeps nothing: tokens last
// as long as the process. Once forgotten (the server was removed), it
// keeps nothing more.
type tokenStore struct {
	path string

	mu   sync.Mutex // serializes save and forget
	gone bool       // forget was called: save does nothing
}

// tokenSuffix ends a stored record's file name.
const tokenSuffix = ".json"

// forget removes the stored record, and makes later saves (a refresh still
// under way) do nothing.
func (s *tokenStore) forget() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
	if s.path == "" {
		return nil
	}
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// pruneTokens removes from dir the stored records of servers not in keep
// (removed from the configuration while toold was stopped, or added at
// runtime by an earlier toold); it returns the names it removed.
func pruneTokens(dir string, keep func(name string) bool) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), tokenSuffix)
		if !ok || !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || keep(name) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

func newTokenStore(dir, name string) *tokenStore {
	if dir == "" {
		return &tokenStore{}
	}
	return &tokenStore{path: filepath.Join(dir, name+tokenSuffix)}
}

// load returns the stored record, nil when there is none.
func (s *tokenStore) load() (*tokenRecord, error) {
	if s.path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r tokenRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", s.path, err)
	}
	return &r, nil
}

func (s *tokenStore) save(r *tokenRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.path == "" || s.gone {
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), s.path)
}
