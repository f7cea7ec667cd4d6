// Package pgtest runs a real PostgreSQL server for tests and benchmarks:
// Debian's binaries (the postgresql package, which `make postgres`
// installs), a fresh cluster made by initdb in a temp dir, listening only on
// a unix socket in that dir (no TCP), stopped and removed afterwards.
//
// initdb and postgres refuse to run as root; when the caller is root the
// server runs as the "postgres" user (which the Debian package creates),
// and the temp dir is given to it.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toold/toold/pkg/procgroup"
)

// Server is a running PostgreSQL server.
type Server struct {
	dir  string // owned by the server's user; holds data/ and the socket
	cmd  *exec.Cmd
	done chan struct{}
	err  error // the server's exit, once done is closed
	next atomic.Int64
}

// Bin returns the directory of Debian's PostgreSQL binaries (the newest
// version under /usr/lib/postgresql), or of initdb on PATH.
func Bin() (string, error) {
	if d := os.Getenv("TOOLD_PG_BIN"); d != "" {
		return d, nil
	}
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(ms, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(ms[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(ms[j]))))
		return vi > vj
	})
	if len(ms) > 0 {
		return filepath.Dir(ms[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run `make postgres`")
}

// Start initializes a cluster in a new temp dir and starts a server on a
// unix socket there. Stop it with Stop.
func Start(ctx context.Context) (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "toold-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, done: make(chan struct{})}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and there is no postgres user to run the server as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	command := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.Dir = dir
		c.Env = []string{"LANG=C", "LC_ALL=C", "PATH=/usr/bin:/bin"}
		// No Pdeathsig: the kernel sends it when the thread that forked
		// the server exits, and toold's sandbox code ends locked threads
		// in the same test binary, which killed the server mid-test. The
		// test's cleanup stops it.
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
		return c
	}
	data := filepath.Join(dir, "data")
	var out bytes.Buffer
	initdb := command("initdb", "-D", data, "-U", "toold", "-A", "trust", "-E", "UTF8", "--locale=C", "-N")
	initdb.Stdout, initdb.Stderr = &out, &out
	if err := initdb.Run(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out.Bytes())
	}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logf.Close()
	s.cmd = command("postgres", "-D", data, "-k", dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("postgres: %w", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	// Ready when a connection succeeds.
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := pgx.Connect(ctx, s.dsn("postgres"))
		if err == nil {
			c.Close(ctx)
			return s, nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("postgres exited at start: %v\n%s", s.err, log)
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("postgres did not accept connections within 60s: %v", err)
		}
	}
}

func (s *Server) dsn(db string) string {
	return "host=" + s.dir + " user=toold dbname=" + db + " sslmode=disable"
}

// NewDatabase creates an empty database and returns its DSN.
func (s *Server) NewDatabase(ctx context.Context) (string, error) {
	name := "t" + strconv.FormatInt(s.next.Add(1), 10)
	c, err := pgx.Connect(ctx, s.dsn("postgres"))
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return s.dsn(name), nil
}

// Stop shuts the server down (fast shutdown, then SIGKILL after 10 s) and
// removes its directory.
func (s *Server) Stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = procgroup.Kill(s.cmd)
		<-s.done
	}
	return os.RemoveAll(s.dir)
}

var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared returns the package's server, starting it on first use (stop it
// from TestMain with StopShared). Where PostgreSQL cannot be had, the test
// is skipped — or fails under TOOLD_REQUIRE_PEERS (set by `make test`),
// where the PostgreSQL suite must run.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		shared.srv, shared.err = Start(ctx)
	})
	if shared.err != nil {
		if os.Getenv("TOOLD_REQUIRE_PEERS") != "" {
			t.Fatalf("PostgreSQL is required (TOOLD_REQUIRE_PEERS is set): %v", shared.err)
		}
		t.Skipf("PostgreSQL unavailable (run `make postgres`, or set TOOLD_REQUIRE_PEERS=1 to fail instead): %v", shared.err)
	}
	return shared.srv
}

// NewDatabase returns the DSN of a fresh database on the shared server.
func NewDatabase(t testing.TB) string {
	t.Helper()
	dsn, err := Shared(t).NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// StopShared stops the shared server, if it was started.
func StopShared() {
	if shared.srv != nil {
		_ = shared.srv.Stop()
	}
}
