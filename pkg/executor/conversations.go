package executor

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/toold/toold/pkg/errdefs"
)

// ConversationState is what keeps state for conversations (background
// processes, sessions, kept output, grants); the daemon adapts the terminal
// manager and the policy's grants to it.
type ConversationState interface {
	// Holds reports whether anything is left of conversation conv.
	Holds(conv string) bool
	// Forget ends and removes everything of conv: its processes are
	// killed, its sessions closed, its kept output deleted, its grants
	// revoked. It returns when that is done or ctx ends.
	Forget(ctx context.Context, conv string)
}

// ConversationConfig bounds the conversations nobody is attached to.
type ConversationConfig struct {
	// IdleTTL is how long a conversation with no stream attached keeps its
	// state; then it is reaped: everything of it is forgotten (default
	// 10 min).
	IdleTTL time.Duration
	// MaxIdle is how many conversations with no stream attached may keep
	// state at once; when one more is left, the one idle the longest is
	// reaped at once (default 64).
	MaxIdle int
	// State is what holds the conversations' state; nil holds none (every
	// conversation is forgotten with its last stream).
	State ConversationState
	// Logger receives a line per reaped conversation.
	Logger *slog.Logger
}

// reapTimeout bounds the reaping of one conversation.
const reapTimeout = time.Minute

// errConversationSecret is the class of a refused join.
var errConversationSecret = errors.New("conversation secret")

// Conversations binds conversation ids to secrets and reaps conversations
// nobody is attached to. A conversation exists from its first stream (or
// terminal attach) until it is forgotten: when its last stream leaves and
// nothing of it is left, at once; otherwise when it has been idle for
// IdleTTL, or is the oldest idle one beyond MaxIdle. Joining an existing
// conversation needs its secret; so does joining an id the state holds
// something of without the registry knowing it (another transport's
// conversation, such as the MCP server's). It is safe for concurrent use.
type Conversations struct {
	cfg ConversationConfig

	mu     sync.Mutex
	m      map[string]*conversation
	closed bool
	wg     sync.WaitGroup // reaps in progress
}

type conversation struct {
	id, secret string
	// verify, for a conversation restored with a verifier and no secret
	// (RestoreVerified), checks a presented secret; the first that passes
	// becomes secret.
	verify    func(secret string) bool
	attached  int       // streams and terminal attaches
	idleSince time.Time // when attached dropped to zero
	timer     *time.Timer
	idleGen   uint64 // counts the idle periods; a timer reaps only its own
	reaping   bool
}

// NewConversations returns an empty registry.
func NewConversations(cfg ConversationConfig) *Conversations {
	if cfg.IdleTTL <= 0 {
		cfg.IdleTTL = 10 * time.Minute
	}
	if cfg.MaxIdle <= 0 {
		cfg.MaxIdle = 64
	}
	return &Conversations{cfg: cfg, m: map[string]*conversation{}}
}

// Join attaches one stream to conversation id, presenting secret. An empty
// id starts a new conversation with a generated id ("conv-…", or prefix…);
// an id the registry does not hold starts a new conversation under that
// id; an id it holds needs its secret. It returns the id, the secret to
// hand out, and leave, which the stream calls once when it ends. A refused
// join is an errdefs.ErrDenied error and changes nothing.
func (r *Conversations) Join(id, secret, prefix string) (convID, convSecret string, leave func(), err error) {
	return r.join(id, secret, prefix, false)
}

// JoinExisting is Join for a conversation that must exist already (a
// terminal attach to one of its sessions): an id the registry does not
// hold is refused like a wrong secret.
func (r *Conversations) JoinExisting(id, secret string) (leave func(), err error) {
	_, _, leave, err = r.join(id, secret, "", true)
	return leave, err
}

// Check returns the secret of conversation id when secret is it; a
// conversation the registry does not hold is refused like a wrong secret.
func (r *Conversations) Check(id, secret string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.m[id]
	if id == "" || c == nil || c.reaping || !c.matches(secret) {
		return "", r.denied(id)
	}
	return c.secret, nil
}

// Secret returns the secret of conversation id, and whether the registry
// holds it ("" for a conversation restored with a verifier that no client
// has joined since). The terminal keeps a verifier of it with the
// conversation's processes, so that a toold that adopts them after a
// restart (RestoreVerified) lets the same client reach them.
func (r *Conversations) Secret(id string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.m[id]
	if c == nil {
		return "", false
	}
	return c.secret, true
}

// Restore registers conversation id, bound to secret, with nothing
// attached: what a toold before this one left of it (processes adopted
// after a restart) is reached again with the secret its client had, and is
// reaped after IdleTTL like any idle conversation. An empty secret (one
// that was not known) binds it to a new one nobody holds: it is reaped.
// An id the registry holds already is left as it is.
func (r *Conversations) Restore(id, secret string) {
	if id == "" {
		return
	}
	if secret == "" {
		secret = newSecret()
	}
	r.restore(&conversation{id: id, secret: secret, attached: 1})
}

// restore registers c, idle from now on, unless the registry is closed or
// holds its id already.
func (r *Conversations) restore(c *conversation) {
	r.mu.Lock()
	if r.closed || r.m[c.id] != nil {
		r.mu.Unlock()
		return
	}
	r.m[c.id] = c
	r.mu.Unlock()
	r.leave(c) // idle from now on
}

// RestoreVerified is Restore for a conversation whose secret toold did not
// keep, only a way to check it (a verifier stored with its surviving
// processes): the first secret verify accepts becomes the conversation's
// secret. Secret returns "" until then. A nil verify is Restore with no
// secret.
func (r *Conversations) RestoreVerified(id string, verify func(secret string) bool) {
	if id == "" {
		return
	}
	if verify == nil {
		r.Restore(id, "")
		return
	}
	r.restore(&conversation{id: id, verify: verify, attached: 1})
}

// matches reports whether secret is c's; the caller holds the registry's
// lock.
func (c *conversation) matches(secret string) bool {
	if c.secret == "" && c.verify != nil {
		if secret == "" || !c.verify(secret) {
			return false
		}
		c.secret, c.verify = secret, nil
		return true
	}
	return subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) == 1
}

func (r *Conversations) join(id, secret, prefix string, existing bool) (convID, convSecret string, leave func(), err error) {
	if prefix == "" {
		prefix = "conv-"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", "", nil, errdefs.New(errdefs.ErrUnavailable, "toold is shutting down")
	}
	if existing && (id == "" || r.m[id] == nil) {
		return "", "", nil, r.denied(id)
	}
	if id == "" {
		for id == "" || r.m[id] != nil {
			id = newID(prefix)
		}
	}
	c := r.m[id]
	switch {
	case c == nil && r.cfg.State != nil && r.cfg.State.Holds(id):
		return "", "", nil, r.denied(id)
	case c == nil:
		c = &conversation{id: id, secret: newSecret()}
		r.m[id] = c
	case c.reaping:
		return "", "", nil, errdefs.New(errdefs.ErrUnavailable, "conversation %q is being reaped (it was idle too long); retry in a moment, or start a new conversation", id)
	case !c.matches(secret):
		return "", "", nil, r.denied(id)
	}
	c.attached++
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	var once sync.Once
	return c.id, c.secret, func() { once.Do(func() { r.leave(c) }) }, nil
}

func (r *Conversations) denied(id string) error {
	return &errdefs.Error{Class: errdefs.ErrDenied, Rule: "conversation-secret", Cause: errConversationSecret,
		Msg: "conversation \"" + id + "\" exists and is bound to a secret: present the conversation_secret its first stream got in Welcome, or use another conversation id"}
}

// leave detaches one stream; the last one leaving starts the idle time or
// forgets the conversation at once when nothing of it is left.
func (r *Conversations) leave(c *conversation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.attached--
	if c.attached > 0 || r.closed || r.m[c.id] != c {
		return
	}
	if r.cfg.State == nil || !r.cfg.State.Holds(c.id) {
		delete(r.m, c.id)
		return
	}
	c.idleSince = time.Now()
	c.idleGen++
	gen := c.idleGen
	c.timer = time.AfterFunc(r.cfg.IdleTTL, func() { r.expire(c, gen) })
	// Beyond MaxIdle, the longest idle goes now.
	idle := 0
	var oldest *conversation
	for _, o := range r.m {
		if o.attached == 0 && !o.reaping {
			idle++
			if oldest == nil || o.idleSince.Before(oldest.idleSince) {
				oldest = o
			}
		}
	}
	if idle > r.cfg.MaxIdle && oldest != nil {
		r.reapLocked(oldest, "more than the allowed idle conversations")
	}
}

// expire reaps c when its idle period gen ran out and nobody joined
// since (a timer that fired while a stream joined and left again belongs
// to an earlier period).
func (r *Conversations) expire(c *conversation, gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.m[c.id] != c || c.attached > 0 || c.reaping || c.idleGen != gen {
		return
	}
	r.reapLocked(c, "idle longer than the idle TTL")
}

// reapLocked forgets c in the background; until that is done, c's id
// cannot be joined (so nobody reaches state that is going away).
func (r *Conversations) reapLocked(c *conversation, why string) {
	c.reaping = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if r.cfg.Logger != nil {
		r.cfg.Logger.Info("reaping conversation", "conversation_id", c.id, "reason", why, "idle", time.Since(c.idleSince).Round(time.Millisecond).String())
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), reapTimeout)
		r.cfg.State.Forget(ctx, c.id)
		cancel()
		r.mu.Lock()
		if r.m[c.id] == c {
			delete(r.m, c.id)
		}
		r.mu.Unlock()
	}()
}

// Len returns how many conversations the registry holds, and how many of
// them have no stream attached.
func (r *Conversations) Len() (all, idle int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.m {
		if c.attached == 0 {
			idle++
		}
	}
	return len(r.m), idle
}

// Close stops the idle timers and waits for reaps in progress (toold's
// shutdown then ends everything of every conversation anyway). Joins after
// Close fail with ErrUnavailable.
func (r *Conversations) Close() {
	r.mu.Lock()
	r.closed = true
	for _, c := range r.m {
		if c.timer != nil {
			c.timer.Stop()
			c.timer = nil
		}
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// newSecret returns 128 random bits as 32 hex digits.
func newSecret() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
