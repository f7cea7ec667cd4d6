package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// defaultSocket is where toold listens unless told otherwise (`make run`).
const defaultSocket = "./toold.sock"

// connect opens a client connection to toold and waits until toold answers,
// for at most --connect-timeout: a daemon that is starting gets that long to
// open its socket. The wait is a health check (exempt from the token) with
// WaitForReady, over a connection whose reconnect backoff starts at 50ms.
//
// It fails with exit status 2 and a message saying where toold was expected
// when nothing answers — at once when the socket file does not exist. The
// caller closes the connection.
func (a *app) connect(ctx context.Context) (*grpc.ClientConn, error) {
	target := "passthrough:///localhost"
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("toolctl/" + version),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 2 * time.Second,
		}),
	}
	if a.addr != "" {
		target = "passthrough:///" + a.addr
	} else {
		if err := a.socketExists(ctx); err != nil {
			return nil, err
		}
		// A dialer instead of a unix:// target: socket paths need no URL
		// escaping and may be relative.
		path := a.socket
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}))
	}
	if a.token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken(a.token)))
	}
	// The operator sees every conversation's history, audit records,
	// sessions and todos (operator.go).
	if key := a.operatorCredential(); key != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(operatorToken(key)))
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("cannot reach toold at %s: %w", a.where(), err)}
	}
	wctx, cancel := context.WithTimeout(ctx, a.connectTimeout)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(wctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	switch status.Code(err) {
	case codes.OK, codes.NotFound, codes.Unimplemented, codes.Unauthenticated, codes.PermissionDenied:
		// Something that speaks gRPC answered; the command's own RPCs say
		// whether it is toold and whether it accepts us.
		return conn, nil
	}
	conn.Close()
	if ctx.Err() != nil {
		return nil, &exitError{code: exitUsage, err: context.Cause(ctx)}
	}
	return nil, &exitError{code: exitUsage, err: a.unreachable(err)}
}

// socketExists fails at once, as grpcurl does, when there is no socket
// file at --socket: nothing will answer there within --connect-timeout.
// Only when the user asked to wait (an explicit --connect-timeout: 'make
// run & toolctl --connect-timeout 2m health') and the socket's directory
// exists is the socket file waited for, up to the timeout. The
// message gives the absolute path it looked at, since a relative default
// (./toold.sock) depends on the directory toolctl runs in — an agent's
// hook runs in the agent's.
func (a *app) socketExists(ctx context.Context) error {
	_, err := os.Stat(a.socket)
	if err != nil && errors.Is(err, fs.ErrNotExist) && a.waitForSocket && dirExists(filepath.Dir(a.socket)) {
		deadline := time.NewTimer(a.connectTimeout)
		defer deadline.Stop()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
	wait:
		for {
			select {
			case <-ctx.Done():
				break wait
			case <-deadline.C:
				break wait
			case <-tick.C:
				if _, err = os.Stat(a.socket); err == nil || !errors.Is(err, fs.ErrNotExist) {
					break wait
				}
			}
		}
	}
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // a permission error and the like: the dial says more
	}
	abs, _ := filepath.Abs(a.socket)
	msg := fmt.Sprintf("cannot reach toold at %s: no socket there (%s does not exist); is toold running? (make run)", a.socket, abs)
	if !filepath.IsAbs(a.socket) {
		msg += "\n  a relative --socket or TOOLD_SOCKET is relative to the current directory: set TOOLD_SOCKET to the absolute path of your project's toold.sock"
	}
	return &exitError{code: exitUsage, err: errors.New(msg)}
}

// dirExists reports whether dir is a directory.
func dirExists(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// where names the endpoint for messages, as the user gave it.
func (a *app) where() string {
	if a.addr != "" {
		return a.addr
	}
	return a.socket
}

// unreachable explains a failed wait for toold: where it was expected, how
// to start it, and the last connection error.
func (a *app) unreachable(err error) error {
	hint := "is it running? (make run)"
	if a.addr != "" {
		hint = "is it running and listening there? (toold --listen " + a.addr + ")"
	}
	msg := fmt.Sprintf("cannot reach toold at %s: %s", a.where(), hint)
	if detail := dialDetail(err); detail != "" {
		msg += "\n  last error: " + detail
	}
	return errors.New(msg)
}

// dialDetail digs the dial error out of gRPC's wrapping ("latest balancer
// error: connection error: desc = \"transport: Error while dialing: dial
// unix ./toold.sock: connect: no such file or directory\"").
func dialDetail(err error) string {
	msg := status.Convert(err).Message()
	if i := strings.LastIndex(msg, "dial "); i >= 0 {
		return strings.TrimSuffix(msg[i:], "\"")
	}
	if status.Code(err) == codes.DeadlineExceeded {
		return "" // only "context deadline exceeded": nothing to add
	}
	return msg
}

// rpcError turns a failed RPC into an exit: a refused token and lost
// connections get messages that say what to do; all exit with status 2.
func (a *app) rpcError(what string, err error) error {
	st := status.Convert(err)
	var msg string
	switch st.Code() {
	case codes.Unauthenticated:
		if a.token == "" {
			msg = fmt.Sprintf("toold at %s requires a token: pass --token or set TOOLD_TOKEN (%s)", a.where(), st.Message())
		} else {
			msg = fmt.Sprintf("toold at %s refused the token (%s): check --token or TOOLD_TOKEN", a.where(), st.Message())
		}
	case codes.Unavailable:
		msg = fmt.Sprintf("%s: lost the connection to toold at %s: %s", what, a.where(), st.Message())
	case codes.Canceled:
		msg = fmt.Sprintf("%s: canceled", what)
	case codes.PermissionDenied:
		msg = fmt.Sprintf("%s: %s: %s", what, st.Code(), st.Message())
		switch {
		case strings.Contains(st.Message(), "conversation_secret"):
			msg += " (toolctl: pass --secret, or set TOOLD_CONVERSATION_SECRET; as toold's operator, toolctl reads " + a.operatorKeyPathOr() + ")"
		case strings.Contains(st.Message(), "operator credential"):
			msg += " (toolctl reads it from " + a.operatorKeyPathOr() + ": run toolctl as the user toold runs as, or set TOOLD_STATE_DIR or TOOLD_OPERATOR_KEY)"
		}
	default:
		msg = fmt.Sprintf("%s: %s: %s", what, st.Code(), st.Message())
	}
	return &exitError{code: exitUsage, err: errors.New(msg)}
}

// bearerToken sends "authorization: bearer TOKEN" on every RPC. It is sent
// over plaintext connections too: the unix socket is private to its owner,
// and TCP is meant for loopback or a TLS-terminating proxy.
type bearerToken string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "bearer " + string(t)}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (bearerToken) RequireTransportSecurity() bool { return false }
