// Package mcpconfig is the MCP plugin's configuration section ("mcp:" in
// toold's YAML, and the "mcpServers" files of Claude Desktop, Cursor and
// VS Code). It is owned by the MCP client (pkg/mcp) and imports nothing of
// toold's but the value types every section uses, so neither the client nor
// toolctl pulls in the other plugins through pkg/config.
package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/toold/toold/pkg/config/value"
)

// Config configures toold's Model Context Protocol support: the external MCP
// servers whose tools toold offers (client side), and serving toold's own
// tools over streamable HTTP (server side; `toold mcp` serves stdio).
type Config struct {
	// Servers are the MCP servers toold connects to, keyed by name, in the
	// "mcpServers" shape Claude Desktop, Claude Code and Cursor write. Their
	// tools are registered as "NAME__TOOL".
	Servers map[string]Server `yaml:"mcpServers"`
	// ConfigFile is a JSON file in the same shape ({"mcpServers": {...}}, as
	// claude_desktop_config.json or .cursor/mcp.json); its servers join
	// Servers. A name defined in both is an error. --mcp-config sets it.
	ConfigFile string `yaml:"config_file"`
	// HTTP serves toold's tools as an MCP server (streamable HTTP) at /mcp
	// on the TCP listener (listen), guarded by the token when one is set.
	HTTP bool `yaml:"http"`
	// StartupWait bounds how long toold waits at start for the configured
	// servers' first connection, so that the first tool listing includes
	// their tools (default 15s). Slower servers join later.
	StartupWait value.Duration `yaml:"startup_wait"`
}

// Server is one entry of "mcpServers". A stdio server has Command (with
// Args, Env, Cwd); an HTTP server has URL (with Headers and Type). Values
// may use ${VAR} and ${VAR:-default}, expanded from toold's environment when
// the server is started (listings show them unexpanded).
type Server struct {
	// Command and Args start a stdio server. It gets HOME, LOGNAME, PATH,
	// SHELL, TERM and USER from toold's environment plus Env (as the MCP
	// SDKs do), and runs in Cwd (default: toold's working directory).
	Command string            `yaml:"command" json:"command,omitempty"`
	Args    []string          `yaml:"args" json:"args,omitempty"`
	Env     map[string]string `yaml:"env" json:"env,omitempty"`
	Cwd     string            `yaml:"cwd" json:"cwd,omitempty"`
	// URL reaches an HTTP server; Headers are sent with every request
	// (e.g. "Authorization": "Bearer ${API_TOKEN}").
	URL     string            `yaml:"url" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Type is "stdio", "http" (streamable HTTP; also "streamable-http" or
	// "streamableHttp") or "sse" (the 2024-11-05 HTTP+SSE transport). Empty
	// means stdio with a command, and with a URL http, or sse when the
	// URL's path ends in "/sse".
	Type string `yaml:"type" json:"type,omitempty"`
	// OAuth configures how toold authorizes with an HTTP server that
	// answers 401 with an OAuth challenge (nil: dynamic client registration,
	// a loopback redirect on an ephemeral port). Streamable HTTP only.
	OAuth *OAuth `yaml:"oauth" json:"oauth,omitempty"`
	// Disabled servers are kept in the configuration but not started.
	Disabled bool `yaml:"disabled" json:"disabled,omitempty"`
	// Toold holds toold's own settings for the server; other clients
	// ignore the key.
	Toold ServerPolicy `yaml:"toold" json:"toold,omitzero"`
	// Ignored lists the keys of the entry toold does not use (other
	// clients' settings such as "autoApprove"); they are logged, not errors,
	// so one file can serve several clients.
	Ignored []string `yaml:"-" json:"-"`
}

// OAuth is an HTTP server's OAuth client settings, in Claude Code's
// spelling. Without ClientID and ClientMetadataURL toold registers itself
// dynamically (RFC 7591) with the authorization server.
type OAuth struct {
	// ClientID and ClientSecret are a client pre-registered with the
	// server's authorization server (ClientSecret may be empty for a public
	// client, and may use ${VAR}).
	ClientID     string `yaml:"clientId" json:"clientId,omitempty"`
	ClientSecret string `yaml:"clientSecret" json:"clientSecret,omitempty"`
	// ClientMetadataURL is an https URL of a client ID metadata document
	// (SEP-991) naming toold's client; used where the authorization server
	// supports it, before ClientID and dynamic registration.
	ClientMetadataURL string `yaml:"clientMetadataUrl" json:"clientMetadataUrl,omitempty"`
	// CallbackPort fixes the loopback redirect's port
	// (http://127.0.0.1:PORT/callback), for a pre-registered client whose
	// redirect URI names one; 0 takes an ephemeral port per authorization.
	CallbackPort int `yaml:"callbackPort" json:"callbackPort,omitempty"`
	// Scopes, when set, are requested instead of those the server's
	// challenge or metadata name.
	Scopes []string `yaml:"scopes" json:"scopes,omitempty"`
	// Grant is "authorization_code" (the default: a person authorizes) or
	// "client_credentials" (SEP-1046: toold obtains tokens with ClientID and
	// ClientSecret alone, no person; for a service account).
	Grant string `yaml:"grant" json:"grant,omitempty"`
}

// OAuth grants, as OAuth.Grant names them.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// validate checks the OAuth settings of server name.
func (o *OAuth) validate(name string) error {
	if o == nil {
		return nil
	}
	if o.CallbackPort < 0 || o.CallbackPort > 65535 {
		return fmt.Errorf("MCP server %s: oauth.callbackPort %d: want 1-65535, or 0 for an ephemeral port", name, o.CallbackPort)
	}
	switch o.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if o.ClientID == "" || o.ClientSecret == "" {
			return fmt.Errorf("MCP server %s: oauth.grant client_credentials needs oauth.clientId and oauth.clientSecret", name)
		}
	default:
		return fmt.Errorf("MCP server %s: oauth.grant %q: want authorization_code or client_credentials", name, o.Grant)
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return fmt.Errorf("MCP server %s: oauth.clientSecret needs oauth.clientId", name)
	}
	if u := o.ClientMetadataURL; u != "" && !strings.Contains(u, "${") {
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme != "https" || pu.Host == "" || strings.Trim(pu.Path, "/") == "" {
			return fmt.Errorf("MCP server %s: oauth.clientMetadataUrl %q: want an https URL with a path (a client ID metadata document)", name, u)
		}
	}
	return nil
}

// ServerPolicy is what toold adds to a server entry: how risky its tools
// are, and how long their calls may take.
type ServerPolicy struct {
	// Risk, when set (low, medium or high), is the risk of every tool of the
	// server, replacing what the server's annotations hint: hints from a
	// server are only hints.
	Risk string `yaml:"risk" json:"risk,omitempty"`
	// ToolRisk sets the risk of single tools by their name on the server;
	// it wins over Risk and the hints.
	ToolRisk map[string]string `yaml:"tool_risk" json:"tool_risk,omitempty"`
	// IdleTimeout ends a call when the server sent neither progress nor a
	// result for this long (default 60s). Progress notifications reset it.
	IdleTimeout value.Duration `yaml:"idle_timeout" json:"idle_timeout,omitempty"`
	// MaxTimeout caps a call of this server however much progress it
	// reports; zero leaves only the call's own timeout (timeouts.default,
	// or what the call asked for up to timeouts.max), which always applies.
	MaxTimeout value.Duration `yaml:"max_timeout" json:"max_timeout,omitempty"`
}

// MCP transports, as Server.Transport reports them.
const (
	Stdio = "stdio"
	HTTP  = "http"
	SSE   = "sse"
)

// serverName is what a server may be called: its name prefixes its tools'
// names ("NAME__TOOL"), which must stay unambiguous and valid for every
// model provider.
var serverName = regexp.MustCompile(`^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$`)

// ValidName checks a server name: letters, digits, "-" and single
// "_" (a "__" would make "NAME__TOOL" ambiguous), at most 32 characters.
func ValidName(name string) error {
	if len(name) == 0 || len(name) > 32 || !serverName.MatchString(name) {
		return fmt.Errorf("MCP server name %q: use 1-32 letters, digits, '-' and single '_' (it prefixes the tool names as NAME__TOOL)", name)
	}
	return nil
}

// Transport returns "stdio", "http" or "sse", inferring it as Type says.
func (s Server) Transport() string {
	switch strings.ToLower(strings.ReplaceAll(s.Type, "_", "-")) {
	case "stdio":
		return Stdio
	case "http", "streamable-http", "streamablehttp":
		return HTTP
	case "sse":
		return SSE
	case "":
		if s.Command != "" || s.URL == "" {
			return Stdio
		}
		if u, err := url.Parse(s.URL); err == nil && strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/sse") {
			return SSE
		}
		return HTTP
	}
	return ""
}

// Validate checks one server entry named name.
func (s Server) Validate(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	switch s.Transport() {
	case "":
		return fmt.Errorf("MCP server %s: type %q: want stdio, http or sse", name, s.Type)
	case Stdio:
		if s.Command == "" {
			return fmt.Errorf("MCP server %s: give a command (stdio) or a url (http, sse)", name)
		}
		if s.URL != "" || len(s.Headers) > 0 || s.OAuth != nil {
			return fmt.Errorf("MCP server %s: a stdio server takes command, args, env and cwd, not url, headers or oauth", name)
		}
	default:
		if s.URL == "" {
			return fmt.Errorf("MCP server %s: type %s needs a url", name, s.Type)
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
			return fmt.Errorf("MCP server %s: an HTTP server takes url, headers and type, not command, args, env or cwd", name)
		}
		if s.OAuth != nil && s.Transport() == SSE {
			return fmt.Errorf("MCP server %s: oauth needs the streamable HTTP transport (type http); the SSE transport has no OAuth client", name)
		}
		if err := s.OAuth.validate(name); err != nil {
			return err
		}
		if !strings.Contains(s.URL, "${") {
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("MCP server %s: url %q: want an http:// or https:// URL", name, s.URL)
			}
		}
	}
	if s.Toold.Risk != "" {
		if _, err := ParseRisk(s.Toold.Risk); err != nil {
			return fmt.Errorf("MCP server %s: toold.risk: %w", name, err)
		}
	}
	for tool, r := range s.Toold.ToolRisk {
		if _, err := ParseRisk(r); err != nil {
			return fmt.Errorf("MCP server %s: toold.tool_risk.%s: %w", name, tool, err)
		}
	}
	if s.Toold.IdleTimeout < 0 || s.Toold.MaxTimeout < 0 {
		return fmt.Errorf("MCP server %s: timeouts must not be negative", name)
	}
	return nil
}

// ParseRisk checks a risk level written in a config: "low", "medium" or
// "high" (any case), and returns it in lower case.
func ParseRisk(s string) (string, error) {
	switch r := strings.ToLower(s); r {
	case "low", "medium", "high":
		return r, nil
	}
	return "", fmt.Errorf("risk %q: want low, medium or high", s)
}

// ResolveServers returns Servers joined with those of ConfigFile, every
// entry validated. Disabled entries are included; the caller skips them.
func (m Config) ResolveServers() (map[string]Server, error) {
	out := make(map[string]Server, len(m.Servers))
	for name, s := range m.Servers {
		out[name] = s
	}
	if m.ConfigFile != "" {
		fromFile, err := LoadFile(m.ConfigFile)
		if err != nil {
			return nil, err
		}
		for name, s := range fromFile {
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("MCP server %s is defined both in the toold config and in %s", name, m.ConfigFile)
			}
			out[name] = s
		}
	}
	var errs []error
	for _, name := range sortedKeys(out) {
		if err := out[name].Validate(name); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// LoadFile reads a JSON file holding {"mcpServers": {...}} as Claude
// Desktop, Claude Code and Cursor write it ({"servers": {...}}, VS Code's
// shape, is read too). Other top-level keys are ignored: the file may be a
// whole client configuration.
func LoadFile(path string) (map[string]Server, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcp config: %w", err)
	}
	servers, err := ParseJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return servers, nil
}

// ParseJSON parses the JSON text of an MCP client configuration
// ({"mcpServers": {...}} or {"servers": {...}}).
func ParseJSON(b []byte) (map[string]Server, error) {
	var doc struct {
		MCPServers map[string]Server `json:"mcpServers"`
		Servers    map[string]Server `json:"servers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc.MCPServers == nil && doc.Servers == nil {
		return nil, errors.New(`no "mcpServers" object: want {"mcpServers": {"NAME": {"command": ...} or {"url": ...}}}`)
	}
	if doc.MCPServers != nil && doc.Servers != nil {
		return nil, errors.New(`both "mcpServers" and "servers": keep one`)
	}
	if doc.MCPServers != nil {
		return doc.MCPServers, nil
	}
	return doc.Servers, nil
}

var (
	serverKeys = []string{"command", "args", "env", "cwd", "url", "headers", "type", "oauth", "disabled", "toold"}
	policyKeys = []string{"risk", "tool_risk", "idle_timeout", "max_timeout"}
)

// UnmarshalJSON implements json.Unmarshaler: known keys are decoded, others
// are collected in Ignored.
func (s *Server) UnmarshalJSON(b []byte) error {
	type plain Server
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	p.Ignored = unknownKeys(keys, serverKeys)
	*s = Server(p)
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler, like UnmarshalJSON.
func (s *Server) UnmarshalYAML(n *yaml.Node) error {
	type plain Server
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	var keys map[string]yaml.Node
	if err := n.Decode(&keys); err != nil {
		return err
	}
	p.Ignored = unknownKeys(keys, serverKeys)
	*s = Server(p)
	return nil
}

// UnmarshalJSON implements json.Unmarshaler. toold's own keys are strict: a
// typo is an error, not a silently ignored setting.
func (p *ServerPolicy) UnmarshalJSON(b []byte) error {
	type plain ServerPolicy
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var v plain
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("toold: %w (known keys: %s)", err, strings.Join(policyKeys, ", "))
	}
	*p = ServerPolicy(v)
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler, strict like UnmarshalJSON.
func (p *ServerPolicy) UnmarshalYAML(n *yaml.Node) error {
	var keys map[string]yaml.Node
	if err := n.Decode(&keys); err != nil {
		return err
	}
	if unknown := unknownKeys(keys, policyKeys); len(unknown) > 0 {
		return fmt.Errorf("line %d: toold: unknown keys %s (known keys: %s)", n.Line, strings.Join(unknown, ", "), strings.Join(policyKeys, ", "))
	}
	type plain ServerPolicy
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*p = ServerPolicy(v)
	return nil
}

func unknownKeys[V any](m map[string]V, known []string) []string {
	var out []string
	for k := range m {
		if !slices.Contains(known, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
