package authz

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"github.com/toold/toold/pkg/authz/internal/shellread"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/workspace"
)

// Default grant lifetimes.
const (
	// DefaultGrantTTL is how long a grant lives when nobody says.
	DefaultGrantTTL = 300 * time.Second
	// DefaultMaxGrantTTL caps what a grant may ask for.
	DefaultMaxGrantTTL = 24 * time.Hour
)

// EngineConfig configures an Engine.
type EngineConfig struct {
	// Workspace is the workspace calls work in; required. The Engine does
	// not close it.
	Workspace *workspace.Workspace
	// Policy is the policy; nil means DefaultPolicy (built-in rules only).
	Policy *Policy
	// DefaultTTL is the lifetime of grants offered and recorded without
	// one (default 300 s); MaxTTL caps it (default 24 h).
	DefaultTTL, MaxTTL time.Duration
	// Clock returns the time; nil means time.Now. Tests control grant
	// expiry with it.
	Clock func() time.Time
	// Logger receives grant changes at debug level; nil discards.
	Logger *slog.Logger
	// Home is the home directory ~ stands for; empty means the daemon's
	// ($HOME).
	Home string
	// ReadRoots are directories outside the workspace that AUTO reads
	// without asking, in addition to the policy's read_roots.
	ReadRoots []string
	// Sensitive are further sensitive path patterns, such as toold's token
	// file and the policy file itself.
	Sensitive []string
	// Containment is what the kernel sandbox holds for the command lines
	// toold runs; the zero value is no sandbox. With every layer in force,
	// AUTO runs what the judge finds no danger in without asking (see
	// Containment).
	Containment Containment
}

// Engine is toold's policy engine. It implements Authorizer, Granter,
// Explainer and Sensitivity, and is safe for concurrent use. It starts no
// goroutines: expired grants are removed whenever grants are used or
// listed.
//
// Authorize judges a call in parts (each path it reads or writes, each
// command of its command line, each host it reaches) and returns the
// strictest decision over them: deny > ask > allow. In order: sensitive
// paths are denied unless an allow rule with "sensitive: true" names them;
// of the rules that match a part, the strictest decides (deny, ask, then
// allow); what cannot be judged asks in every mode (a command line that
// does not parse, a command name only known at run time, eval of a computed
// string, raised privileges) unless the kernel sandbox holds command lines
// (SetContainment), where it runs; a write outside the workspace asks
// unless a paths rule allows it; a live grant of the conversation turns an
// ask into allow (never a deny); otherwise the approval mode decides: for
// commands in the sandbox, AUTO asks only for the dangerous classes
// (classes.yaml), for the rest by risk. See docs/policy.md.
//
// An allow or deny on a call with nothing to judge but its tool and
// operation (think, most MCP tools), which no rule reading arguments
// matches, is kept for the engine's life and returned for the next such
// call in the same mode and at the same risk (callverdict.go): the same
// verdict, without judging it again.
type Engine struct {
	ws         *workspace.Workspace
	wsDir      string
	policy     *Policy
	rules      []*rule
	sensitive  *SensitiveMatcher
	contain    atomic.Pointer[Containment]
	readRoots  []string
	scope      pathScope
	home       string
	defaultTTL time.Duration
	maxTTL     time.Duration
	now        func() time.Time
	log        *slog.Logger
	grants     grantStore
	// lines keeps parsed command lines (linecache.go).
	lines lineCache
	// kept are the verdicts on plain calls (callverdict.go).
	kept callVerdicts
}

var (
	_ Authorizer = (*Engine)(nil)
	_ Granter    = (*Engine)(nil)
	_ Explainer  = (*Engine)(nil)
)

// NewEngine returns an Engine for cfg.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	if cfg.Workspace == nil {
		return nil, errdefs.New(errdefs.ErrInvalidArgument, "authz: EngineConfig.Workspace is required")
	}
	e := &Engine{
		ws:         cfg.Workspace,
		wsDir:      cfg.Workspace.Dir(),
		policy:     cfg.Policy,
		defaultTTL: cfg.DefaultTTL,
		maxTTL:     cfg.MaxTTL,
		now:        cfg.Clock,
		log:        cfg.Logger,
		home:       cfg.Home,
	}
	if e.policy == nil {
		e.policy = DefaultPolicy()
	}
	if e.defaultTTL <= 0 {
		e.defaultTTL = DefaultGrantTTL
	}
	if e.maxTTL <= 0 {
		e.maxTTL = DefaultMaxGrantTTL
	}
	e.defaultTTL = min(e.defaultTTL, e.maxTTL)
	if e.now == nil {
		e.now = time.Now
	}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.home == "" {
		e.home, _ = os.UserHomeDir()
	}
	if e.home != "" {
		e.home = filepath.Clean(e.home)
	}
	if err := e.SetContainment(cfg.Containment); err != nil {
		return nil, err
	}
	e.rules = e.policy.allRules()
	var err error
	patterns := append(append([]string(nil), e.policy.sensitive...), cfg.Sensitive...)
	if len(e.policy.sensitive) == 0 {
		patterns = append(DefaultSensitive(), cfg.Sensitive...)
	}
	if e.sensitive, err = NewSensitiveMatcher(e.wsDir, e.home, patterns); err != nil {
		return nil, errdefs.Invalid("", "sensitive", "authz: %v", err)
	}
	e.scope = pathScope{ws: e.wsDir}
	if e.home != "" {
		e.scope.homes = []string{e.home}
	}
	for _, r := range append(append([]string(nil), e.policy.readRoots...), cfg.ReadRoots...) {
		abs := r
		if r == "~" || strings.HasPrefix(r, "~/") {
			if e.home == "" {
				continue
			}
			abs = e.home + r[1:]
		}
		if !filepath.IsAbs(abs) {
			return nil, errdefs.Invalid("", "read_roots", "authz: read root %q must be absolute or start with ~/", r)
		}
		abs = filepath.Clean(abs)
		e.readRoots = append(e.readRoots, abs)
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			e.readRoots = append(e.readRoots, real)
		}
	}
	return e, nil
}

// SetContainment says which layers of the kernel sandbox hold for command
// lines from now on (the daemon learns them when its terminal manager
// starts, after the engine is built). Safe for concurrent use; an error
// (a relative writable directory) changes nothing.
func (e *Engine) SetContainment(c Containment) error {
	c, err := c.cleanWritable()
	if err != nil {
		return errdefs.Invalid("", "containment", "authz: %v", err)
	}
	e.contain.Store(&c)
	return nil
}

// Policy returns the engine's policy.
func (e *Engine) Policy() *Policy { return e.policy }

// Sensitive reports whether abs, an absolute path with symlinks resolved,
// is sensitive: the file tools withhold such entries from directory walks.
// It ignores rules that allow sensitive paths (a walk names no path
// explicitly).
func (e *Engine) Sensitive(abs string) bool { return e.sensitive.Sensitive(abs) }

// Authorize implements Authorizer. It consumes a one-time grant that
// allows the call. It returns an error only for a nil request.
func (e *Engine) Authorize(_ context.Context, req *Request) (Verdict, error) {
	if req == nil {
		return Verdict{}, errdefs.New(errdefs.ErrInternal, "authz: nil request")
	}
	return e.decideKept(req, true), nil
}

// Explain implements Explainer: the verdict Authorize would return now,
// with the grant that would apply, without consuming it.
func (e *Engine) Explain(_ context.Context, req *Request) (Verdict, error) {
	if req == nil {
		return Verdict{}, errdefs.New(errdefs.ErrInternal, "authz: nil request")
	}
	return e.decideKept(req, false), nil
}

// Grant implements Granter. conversationID and scope.Tool are required;
// scope.Operation empty covers every operation of the tool; a PathPrefix
// must be absolute. ttl <= 0 means the default; ttl is capped at the
// maximum.
func (e *Engine) Grant(conversationID string, scope Scope, once bool, ttl time.Duration, grantedBy string) (Grant, error) {
	if conversationID == "" {
		return Grant{}, errdefs.Invalid("conversation_id", "required", "a grant needs a conversation")
	}
	if scope.Tool == "" {
		return Grant{}, errdefs.Invalid("scope.tool", "required", "a grant needs a tool")
	}
	if scope.PathPrefix != "" {
		if !filepath.IsAbs(scope.PathPrefix) {
			return Grant{}, errdefs.Invalid("scope.path_prefix", "absolute", "path prefix %q must be absolute", scope.PathPrefix)
		}
		scope.PathPrefix = filepath.Clean(scope.PathPrefix)
	}
	if scope.CommandPrefix != "" && len(strings.Fields(scope.CommandPrefix)) == 0 {
		scope.CommandPrefix = ""
	}
	if scope.Arguments != "" {
		dec := json.NewDecoder(strings.NewReader(scope.Arguments))
		dec.UseNumber()
		var args map[string]any
		if err := dec.Decode(&args); err != nil || args == nil || dec.More() {
			return Grant{}, errdefs.Invalid("scope.arguments", "type", "the arguments a grant is bound to must be one JSON object")
		}
		scope.Arguments = argsKey(args)
	}
	if ttl <= 0 {
		ttl = e.defaultTTL
	}
	ttl = min(ttl, e.maxTTL)
	now := e.now()
	scope.Conversation = !once
	scope.TTL = ttl
	g := Grant{
		ID:             newGrantID(),
		ConversationID: conversationID,
		Scope:          scope,
		Once:           once,
		CreatedAt:      now,
		ExpiresAt:      now.Add(ttl),
		GrantedBy:      grantedBy,
	}
	e.grants.add(g, now)
	e.log.Debug("grant recorded", "grant_id", g.ID, "conversation_id", conversationID, "tool", scope.Tool,
		"operation", scope.Operation, "path_prefix", scope.PathPrefix, "command_prefix", scope.CommandPrefix,
		"once", once, "expires_at", g.ExpiresAt, "granted_by", grantedBy)
	return g, nil
}

// Grants implements Granter. Expired grants are removed first.
func (e *Engine) Grants(conversationID string) []Grant {
	return e.grants.list(conversationID, e.now())
}

// Revoke implements Granter.
func (e *Engine) Revoke(id string) bool {
	ok := e.grants.revoke(id)
	if ok {
		e.log.Debug("grant revoked", "grant_id", id)
	}
	return ok
}

func newGrantID() string {
	var b [9]byte
	_, _ = rand.Read(b[:])
	return "grant-" + hex.EncodeToString(b[:])
}

// underDir reports whether p is dir or below it.
func underDir(p, dir string) bool {
	_, ok := shellread.CutDir(p, dir)
	return ok
}

// readRoot reports whether abs is under a read root.
func (e *Engine) readRoot(abs string) bool {
	for _, r := range e.readRoots {
		if underDir(abs, r) {
			return true
		}
	}
	return false
}
