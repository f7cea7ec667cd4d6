// Package daemontest starts a real toold for tests: the same daemon.Main
// that cmd/toold runs, on a temp unix socket, with a temp workspace.
package daemontest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/service"
)

// Daemon is a running toold and a client connected to it.
type Daemon struct {
	Main *daemon.Main
	// Socket is the unix socket path.
	Socket string
	// Workspace is the workspace directory (a t.TempDir unless configured).
	Workspace string
	// Conn is a client connection over the socket; Client uses it.
	Conn   *grpc.ClientConn
	Client pb.ToolServiceClient
}

// Option changes the daemon before it starts.
type Option func(*daemon.Main)

// WithWorkspace sets the workspace directory.
func WithWorkspace(dir string) Option { return func(m *daemon.Main) { m.Config.Workspace = dir } }

// WithAuthorizer replaces the daemon's policy (a test's fake, or an engine
// the test built) with the capabilities it is given (an engine's are
// eng.Capabilities()).
func WithAuthorizer(a authz.Authorizer, caps authz.Capabilities) Option {
	return func(m *daemon.Main) { m.Authorizer, m.Capabilities = a, caps }
}

// WithConfig applies an arbitrary change to the configuration.
func WithConfig(f func(*config.Config)) Option { return func(m *daemon.Main) { f(&m.Config) } }

// Start runs a daemon until the test ends. Its logs go to the test log when
// the TOOLD_TEST_LOG environment variable is set, and nowhere otherwise.
func Start(t testing.TB, opts ...Option) *Daemon {
	t.Helper()
	// Unix socket paths are limited to 108 bytes; t.TempDir can be longer.
	sockDir, err := os.MkdirTemp("", "toold-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	cfg := config.Default()
	cfg.Socket = filepath.Join(sockDir, "toold.sock")
	cfg.Workspace = t.TempDir()
	cfg.StateDir = t.TempDir() // never the user's own state
	cfg.ShutdownGrace = config.Duration(2 * time.Second)
	cfg.Terminal.HelperArgs = sandbox.TestHelperArgs // the test binary is the commands' helper
	var w io.Writer = io.Discard
	if os.Getenv("TOOLD_TEST_LOG") != "" {
		w = testWriter{t}
	}
	m := &daemon.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, o := range opts {
		o(m)
	}
	cfg = m.Config
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("start toold: %v", err)
	}
	conn, err := grpc.NewClient("unix://"+cfg.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		if err := m.Close(); err != nil {
			t.Errorf("close toold: %v", err)
		}
	})
	return &Daemon{Main: m, Socket: cfg.Socket, Workspace: m.Workspace(), Conn: conn, Client: pb.NewToolServiceClient(conn)}
}

// AsOperator returns ctx presenting the daemon's operator credential (the
// contents of operator.key in its state directory), as toolctl does when
// it can read that file: the read-side services (history, audit, every
// conversation's sessions and todos) need it or a conversation's secret.
func (d *Daemon) AsOperator(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, service.OperatorMetadata, d.Main.OperatorCredential())
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
