package service

import (
	"context"
	"crypto/subtle"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/toold/toold/pkg/executor"
)

// Metadata keys of the credentials the read-side services check (see
// Access).
const (
	// OperatorMetadata carries the operator credential: the contents of the
	// 0600 file operator.key in toold's state directory, which toold
	// creates at start. toolctl sends it when it can read that file.
	OperatorMetadata = "toold-operator"
	// SecretMetadata carries a conversation's secret
	// (Welcome.conversation_secret) for the unary and server-streaming
	// RPCs that read one conversation's records.
	SecretMetadata = "toold-conversation-secret"
)

// Access decides who may see a conversation's records (history, terminal
// sessions, todos) and the daemon-wide ones (the audit log, every
// conversation at once): the operator, recognised by the operator
// credential, sees everything; a client holding a conversation's secret
// sees that conversation; nobody else sees anything. A refusal is
// PERMISSION_DENIED and says what to present.
//
// A conversation's secret is known only while toold holds the conversation
// (see conversations.idle_ttl): afterwards only the operator can read its
// records. Create Access with NewAccess; with a nil *Access every check
// fails (an unconfigured Access is not allow-all).
type Access struct {
	operator []byte
	convs    SecretChecker
}

// SecretChecker checks a conversation's secret; *executor.Conversations
// implements it.
type SecretChecker interface {
	// Check returns the secret of conversation id when secret is it, and
	// an error when it is not or the conversation is not held.
	Check(id, secret string) (string, error)
}

var _ SecretChecker = (*executor.Conversations)(nil)

// NewAccess returns the access rules with operator as the operator
// credential ("": nobody is the operator) and convs as the registry whose
// secrets identify conversations (nil: no secret is accepted).
func NewAccess(operator string, convs SecretChecker) *Access {
	return &Access{operator: []byte(operator), convs: convs}
}

func firstMD(ctx context.Context, key string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Operator reports whether the RPC presented the operator credential.
func (a *Access) Operator(ctx context.Context) bool {
	if a == nil || len(a.operator) == 0 {
		return false
	}
	got := firstMD(ctx, OperatorMetadata)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), a.operator) == 1
}

// RequireOperator refuses an RPC that did not present the operator
// credential; what names what was asked for.
func (a *Access) RequireOperator(ctx context.Context, what string) error {
	if a.Operator(ctx) {
		return nil
	}
	return status.Errorf(codes.PermissionDenied,
		"%s needs the operator credential (metadata %q: the contents of operator.key in toold's state directory; toolctl sends it when it can read that file)",
		what, OperatorMetadata)
}

// Holds reports whether the RPC presented conversation conv's secret or
// the operator credential: what Conversation requires, as a yes or no.
func (a *Access) Holds(ctx context.Context, conv string) bool {
	return a.Conversation(ctx, conv, "") == nil
}

// Conversation refuses an RPC that reads conversation conv's records
// unless it presented conv's secret or the operator credential. An empty
// conv (every conversation) needs the operator.
func (a *Access) Conversation(ctx context.Context, conv, what string) error {
	if a.Operator(ctx) {
		return nil
	}
	if conv == "" {
		return status.Errorf(codes.PermissionDenied,
			"%s of every conversation needs the operator credential (metadata %q); name one conversation and present its secret (metadata %q) to see only it",
			what, OperatorMetadata, SecretMetadata)
	}
	if a != nil && a.convs != nil {
		if sec := firstMD(ctx, SecretMetadata); sec != "" {
			if _, err := a.convs.Check(conv, sec); err == nil {
				return nil
			}
		}
	}
	return status.Errorf(codes.PermissionDenied,
		"%s of conversation %q needs its conversation_secret (metadata %q, as Welcome handed it out; toolctl: --secret) or the operator credential (metadata %q); a conversation toold no longer holds is readable by the operator only",
		what, conv, SecretMetadata, OperatorMetadata)
}
