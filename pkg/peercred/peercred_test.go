package peercred_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/peercred"
)

// The test binary stands in for the processes of a command: with
// PEERCRED_CHILD=wait it waits until its stdin closes; with
// PEERCRED_CHILD=spawn it starts a "wait" child of its own, prints that
// child's pid, and waits until its stdin closes (then the child's closes
// too).
func TestMain(m *testing.M) {
	switch os.Getenv("PEERCRED_CHILD") {
	case "wait":
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "netns":
		os.Exit(mainThreadInOtherNetns())
	case "spawn":
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), "PEERCRED_CHILD=wait")
		c.Stdin = os.Stdin
		if err := c.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(c.Process.Pid)
		c.Wait()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func init() {
	// Keep TestMain's goroutine on the main thread, for the "netns" child.
	if os.Getenv("PEERCRED_CHILD") == "netns" {
		runtime.LockOSThread()
	}
}

// mainThreadInOtherNetns moves the main thread (the one /proc/self names)
// into a new network namespace, as a sandbox joining its namespace on a
// thread that then stays there does, and checks that a loopback
// connection made on the other threads is still attributed. 0: it is; 1:
// it is not; 2: the namespace cannot be made here.
func mainThreadInOtherNetns() int {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		fmt.Println("unshare:", err)
		return 2
	}
	res := make(chan int)
	go func() { // on another thread, in the original namespace
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			fmt.Println(err)
			res <- 1
			return
		}
		defer l.Close()
		c, err := net.Dial("tcp4", l.Addr().String())
		if err != nil {
			fmt.Println(err)
			res <- 1
			return
		}
		defer c.Close()
		s, err := l.Accept()
		if err != nil {
			res <- 1
			return
		}
		defer s.Close()
		ch := peercred.Checker{Self: os.Getpid()}
		pids, err := ch.TCPPeers(s.LocalAddr(), s.RemoteAddr())
		if err != nil || !slices.Contains(pids, os.Getpid()) {
			fmt.Println("TCPPeers:", pids, err)
			res <- 1
			return
		}
		res <- 0
	}()
	return <-res
}

// The owner of a loopback connection is found even when the main thread,
// whose namespace /proc/self/net shows, is in another network namespace.
func TestTCPPeersMainThreadElsewhere(t *testing.T) {
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), "PEERCRED_CHILD=netns")
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		t.Skipf("cannot create a network namespace here (needs CAP_SYS_ADMIN): %s", out)
	default:
		t.Fatalf("%v: %s", err, out)
	}
}

// child starts the test binary in mode; it ends with the test.
func child(t *testing.T, mode string) (pid int, stdout *bufio.Reader) {
	t.Helper()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), "PEERCRED_CHILD="+mode)
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); c.Wait() })
	return c.Process.Pid, bufio.NewReader(out)
}

func TestCheckProcessTree(t *testing.T) {
	self := os.Getpid()
	direct, out := child(t, "spawn")
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("spawn said %q", line)
	}
	tests := []struct {
		name    string
		c       peercred.Checker
		pid     int
		command bool
	}{
		{"toold itself", peercred.Checker{Self: self}, self, false},
		{"a direct child (an MCP server, a hook, a test's client)", peercred.Checker{Self: self}, direct, false},
		{"a grandchild (a command below its helper)", peercred.Checker{Self: self}, grandchild, true},
		{"a direct child when toold adopts orphans", peercred.Checker{Self: self, ReapsOrphans: true}, direct, true},
		{"a process outside toold's tree", peercred.Checker{Self: self}, os.Getppid(), false},
		{"the grandchild of another toold", peercred.Checker{Self: direct}, self, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := tt.c.Check(tt.pid)
			if err != nil {
				t.Fatal(err)
			}
			if v.Command != tt.command {
				t.Fatalf("Check(%d) = %+v, want command %v", tt.pid, v, tt.command)
			}
			if v.Command && !strings.Contains(v.Reason, strconv.Itoa(tt.pid)) {
				t.Fatalf("the reason does not name the process: %q", v.Reason)
			}
		})
	}
}

// A process that is gone cannot be identified: callers refuse it.
func TestCheckGoneProcess(t *testing.T) {
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), "PEERCRED_CHILD=wait")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	ch := peercred.Checker{Self: os.Getpid()}
	if _, err := ch.Check(c.Process.Pid); err == nil {
		t.Fatalf("a reaped process was identified")
	}
	if _, err := ch.Check(0); err == nil {
		t.Fatal("pid 0 was identified")
	}
}

// A process in one of toold's command cgroups is a command whatever its
// parents: the test moves a child of its own into a real cgroup v2
// directory (root with a writable unified hierarchy only).
func TestCheckCommandCgroup(t *testing.T) {
	own := peercred.OwnCgroup()
	mnt := unifiedMount(t)
	dir := filepath.Join(mnt, own, fmt.Sprintf("peercred-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a cgroup here (needs root and a writable cgroup v2 hierarchy): %v", err)
	}
	pid, _ := child(t, "wait")
	t.Cleanup(func() {
		// Move the child back so the directory can go.
		os.WriteFile(filepath.Join(mnt, own, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
		os.Remove(dir)
	})
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Skipf("cannot move a process into a cgroup here: %v", err)
	}
	cg := filepath.Join(own, filepath.Base(dir))
	for _, tt := range []struct {
		roots   []string
		command bool
	}{
		{[]string{cg}, true},
		{[]string{filepath.Dir(cg) + "/other"}, false},
		{[]string{"/"}, false}, // the root is every process's: never a command cgroup
		{nil, false},
	} {
		c := peercred.Checker{Self: -1, CommandCgroups: func() []string { return tt.roots }}
		v, err := c.Check(pid)
		if err != nil {
			t.Fatal(err)
		}
		if v.Command != tt.command {
			t.Errorf("roots %v: %+v, want command %v", tt.roots, v, tt.command)
		}
	}
}

func unifiedMount(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if ok && strings.HasPrefix(post, "cgroup2 ") {
			if f := strings.Fields(pre); len(f) >= 5 && f[3] == "/" {
				return f[4]
			}
		}
	}
	t.Skip("no cgroup v2 hierarchy is mounted")
	return ""
}

func TestUnixPeer(t *testing.T) {
	dir, err := os.MkdirTemp("", "peercred")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pid, uid, err := peercred.UnixPeer(s.(*net.UnixConn))
	if err != nil || pid != os.Getpid() || uid != os.Getuid() {
		t.Fatalf("UnixPeer = %d, %d, %v; want %d, %d", pid, uid, err, os.Getpid(), os.Getuid())
	}
}

// The holders of a loopback connection's client end are found, whoever
// they are: this process (IPv4 and IPv6), and a child process that holds
// the connection's descriptor.
func TestTCPPeers(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "tcp6" {
				addr = "[::1]:0"
			}
			l, err := net.Listen(network, addr)
			if err != nil {
				t.Skip(err)
			}
			defer l.Close()
			c, err := net.Dial(network, l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !peercred.Loopback(s.RemoteAddr()) {
				t.Fatalf("%s is not loopback", s.RemoteAddr())
			}
			ch := peercred.Checker{Self: os.Getpid()}
			pids, err := ch.TCPPeers(s.LocalAddr(), s.RemoteAddr())
			if err != nil || !slices.Contains(pids, os.Getpid()) {
				t.Fatalf("TCPPeers = %v, %v; want this process %d", pids, err, os.Getpid())
			}

			// A child holding the client end (given as its stdin) is found
			// too, after this process lets go of it.
			f, err := c.(*net.TCPConn).File()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "PEERCRED_CHILD=wait")
			cmd.Stdin = f
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			c.Close()
			defer func() { s.Close(); cmd.Wait() }()
			pids, err = ch.TCPPeers(s.LocalAddr(), s.RemoteAddr())
			if err != nil || !slices.Equal(pids, []int{cmd.Process.Pid}) {
				t.Fatalf("TCPPeers = %v, %v; want the child %d", pids, err, cmd.Process.Pid)
			}
		})
	}
	if peercred.Loopback(&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1}) {
		t.Fatal("192.0.2.1 is not loopback")
	}
}
