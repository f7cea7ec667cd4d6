// Package mcptest finds and starts the real third-party MCP peers the tests
// drive: the reference servers server-everything and server-filesystem and
// the MCP Inspector's CLI, pinned in testdata/mcp/package.json and
// installed by `make mcp-peers` (npm ci). Nothing here stands in for a peer.
//
// Servers started here listen on 127.0.0.1 only (a node preload rewrites
// their listen calls) and are killed, with their process group, when the
// test ends.
package mcptest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/procgroup"
	"github.com/toold/toold/pkg/testenv"
)

// Peers are the installed peers, as absolute paths.
type Peers struct {
	// Node is the node binary.
	Node string
	// Dir is testdata/mcp.
	Dir string
	// Everything and Filesystem are the servers' entry scripts.
	Everything, Filesystem string
	// Inspector is the Inspector's launcher script (`node Inspector --cli`).
	Inspector string
	// Loopback is the preload that keeps servers on 127.0.0.1.
	Loopback string
}

// Require returns the peers. Without node the test is skipped with the
// reason. With node but without the packages it is skipped too, except
// under TOOLD_REQUIRE_PEERS (set by `make test`), where it fails.
func Require(t testing.TB) *Peers {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Need(t, err, "Node.js for the MCP peers (make mcp-peers)")
	}
	dir, err := testdataDir()
	if err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(dir, "node_modules", "@modelcontextprotocol")
	p := &Peers{
		Node:       node,
		Dir:        dir,
		Everything: filepath.Join(mod, "server-everything", "dist", "index.js"),
		Filesystem: filepath.Join(mod, "server-filesystem", "dist", "index.js"),
		Inspector:  filepath.Join(mod, "inspector", "clients", "launcher", "build", "index.js"),
		Loopback:   filepath.Join(dir, "loopback.cjs"),
	}
	for _, f := range []string{p.Everything, p.Filesystem, p.Inspector} {
		if _, err := os.Stat(f); err != nil {
			testenv.Need(t, err, "the MCP peers (make mcp-peers)")
		}
	}
	return p
}

// testdataDir finds testdata/mcp from the module root above the working
// directory.
func testdataDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "mcp"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// EverythingStdio is the configuration entry that runs server-everything
// over stdio, as a user would write it.
func (p *Peers) EverythingStdio() mcpconfig.Server {
	return mcpconfig.Server{Command: p.Node, Args: []string{p.Everything, "stdio"}}
}

// FilesystemStdio runs server-filesystem over stdio, allowed dirs.
func (p *Peers) FilesystemStdio(dirs ...string) mcpconfig.Server {
	return mcpconfig.Server{Command: p.Node, Args: append([]string{p.Filesystem}, dirs...)}
}

// Server is a peer server process listening on loopback.
type Server struct {
	// URL is the MCP endpoint ("http://127.0.0.1:PORT/mcp" or ".../sse").
	URL string
	// Addr is 127.0.0.1:PORT.
	Addr string

	t     testing.TB
	p     *Peers
	mode  string
	mu    sync.Mutex
	cmd   *exec.Cmd
	exits chan struct{}
}

// StartEverythingHTTP starts server-everything with transport mode
// "streamableHttp" or "sse" on a free loopback port and returns it once it
// listens. It is killed when the test ends.
func (p *Peers) StartEverythingHTTP(t testing.TB, mode string) *Server {
	t.Helper()
	s := &Server{t: t, p: p, mode: mode}
	s.start("0")
	t.Cleanup(s.Kill)
	return s
}

func (s *Server) start(port string) {
	s.t.Helper()
	cmd := exec.Command(s.p.Node, "-r", s.p.Loopback, s.p.Everything, s.mode)
	cmd.Env = append(os.Environ(), "PORT="+port)
	procgroup.Own(cmd, true)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exits := make(chan struct{})
	addr := make(chan string, 1)
	var logs strings.Builder
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			logs.WriteString(line + "\n")
			logMu.Unlock()
			if a, ok := strings.CutPrefix(line, "toold-loopback: listening on "); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(exits)
	}()
	select {
	case a := <-addr:
		if !strings.HasPrefix(a, "127.0.0.1:") {
			s.t.Fatalf("server-everything listens on %s, not loopback", a)
		}
		path := "/mcp"
		if s.mode == "sse" {
			path = "/sse"
		}
		s.mu.Lock()
		s.cmd, s.exits, s.Addr, s.URL = cmd, exits, a, "http://"+a+path
		s.mu.Unlock()
	case <-exits:
		logMu.Lock()
		defer logMu.Unlock()
		s.t.Fatalf("server-everything %s exited before listening:\n%s", s.mode, logs.String())
	case <-time.After(20 * time.Second):
		_ = procgroup.Kill(cmd)
		<-exits
		s.t.Fatalf("server-everything %s did not listen within 20s", s.mode)
	}
}

// Kill ends the server's process group and waits for it.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exits := s.cmd, s.exits
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = procgroup.Kill(cmd)
	<-exits
}

// Restart kills the server and starts it again on the same port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	_, port, _ := strings.Cut(s.Addr, ":")
	s.start(port)
}
