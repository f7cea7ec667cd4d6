package sandbox_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// lateSecret is the content of every secret the tests write after a
// command started.
const lateSecret = "LATE-SECRET-a61f0c"

// secretNames is the tests' stand-in for the policy's sensitive paths.
func secretNames(p string) bool {
	b := filepath.Base(p)
	return strings.HasPrefix(b, ".env") || strings.HasPrefix(b, "id_rsa") || strings.HasSuffix(b, ".pem") ||
		strings.HasSuffix(p, "/.aws/credentials")
}

// guardSetup is a workspace, a directory outside it, the shared network
// namespace and a secret guard on the workspace.
type guardSetup struct {
	ws, outside, tmp, home string
	netns                  *sandbox.Netns
	guard                  *sandbox.SecretGuard
	mu                     sync.Mutex
	marked                 map[string]bool
}

func newGuardSetup(t *testing.T) *guardSetup {
	t.Helper()
	return newGuardSetupWith(t, nil)
}

// newGuardSetupWith is newGuardSetup with the guard's configuration
// completed by with (home is a directory beside ws).
func newGuardSetupWith(t *testing.T, with func(c *sandbox.SecretGuardConfig, home string)) *guardSetup {
	t.Helper()
	isolation(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &guardSetup{ws: root + "/ws", outside: root + "/outside", tmp: root + "/tmp", home: root + "/home", marked: map[string]bool{}}
	for _, d := range []string{s.ws, s.outside, s.tmp, s.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.netns, err = sandbox.OpenNetns("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.netns.Close() })
	cfg := sandbox.SecretGuardConfig{Roots: []string{s.ws}, Sensitive: secretNames, Netns: s.netns.File(),
		OnMark: func(p string, _ time.Time) { s.mu.Lock(); s.marked[p] = true; s.mu.Unlock() }}
	if with != nil {
		with(&cfg, s.home)
	}
	s.guard, err = sandbox.OpenSecretGuard(cfg)
	testenv.Need(t, err, "fanotify permission events (root)")
	t.Cleanup(func() { s.guard.Close() })
	return s
}

// waitMarked waits until the guard marked every path (relative to ws).
func (s *guardSetup) waitMarked(t *testing.T, paths ...string) {
	t.Helper()
	testenv.Poll(t, time.Minute, "the guard marking "+strings.Join(paths, ", "), func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(s.ws, p)
			}
			if !s.marked[p] {
				return false
			}
		}
		return true
	})
}

// start runs script (python3, with args) in the sandbox, in the shared network
// namespace, and returns the process and its output when it ends.
func (s *guardSetup) start(t *testing.T, ctx context.Context, py, script string, args ...string) (*sandbox.Process, <-chan string) {
	t.Helper()
	pol := &sandbox.Policy{Isolate: true, Writable: []string{s.ws, s.tmp}}
	spec := sandbox.Spec{Dir: s.ws, Policy: pol, Env: []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + s.tmp},
		Path: py, Args: append([]string{"python3", "-c", script}, args...), Grace: 500 * time.Millisecond}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(ctx, spec, sandbox.Stdio{Stdout: w, Stderr: w, Netns: s.netns.File()})
	w.Close()
	if err != nil {
		r.Close()
		t.Fatalf("start: %v", err)
	}
	out := make(chan string, 1)
	go func() { b, _ := io.ReadAll(r); r.Close(); out <- string(b) }()
	return p, out
}

// readNone lets the command started by start go on (it waits for the
// workspace's file "go") and fails the test when it did not exit 0 or its
// output holds the late secret; it returns the output.
func (s *guardSetup) readNone(t *testing.T, p *sandbox.Process, out <-chan string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.ws, "go"), []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	exit := p.Exit()
	text := <-out
	t.Log(text)
	if exit.Code != 0 {
		t.Fatalf("exit %s:\n%s", exit, text)
	}
	if strings.Contains(text, lateSecret) {
		t.Errorf("the command read a secret that appeared after it started:\n%s", text)
	}
	return text
}

// waitFile waits for a file the command writes when it is ready.
func (s *guardSetup) waitFile(t *testing.T, name string) {
	t.Helper()
	testenv.Poll(t, time.Minute, "the command's "+name, func() bool {
		_, err := os.Stat(filepath.Join(s.ws, name))
		return err == nil
	})
}

func (s *guardSetup) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(s.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// lateReadsScript waits (fifo "go") until the test wrote secrets into the
// workspace, then reads them by every route it has.
const lateReadsScript = `import os, mmap
open("started", "w").close()
open("go").read()
def attempt(label, fn):
    try:
        print(label, "READ", repr(fn()))
    except Exception as e:
        print(label, "REFUSED", type(e).__name__)
def rd(p):
    with open(p, "rb") as f:
        return f.read()
def hardlink():
    os.link(".env", "hl")
    return rd("hl")
def rename():
    os.rename(".env2", "plain.txt")
    try:
        return rd("plain.txt")
    finally:
        os.rename("plain.txt", ".env2")
def procfd():
    fd = os.open(".env", os.O_PATH)
    return rd("/proc/self/fd/%d" % fd)
def mapped():
    fd = os.open(".env", os.O_RDONLY)
    return mmap.mmap(fd, 0, prot=mmap.PROT_READ)[:]
def sendfile():
    fd = os.open(".env", os.O_RDONLY)
    r, w = os.pipe()
    os.sendfile(w, fd, 0, 100)
    return os.read(r, 100)
attempt("path", lambda: rd(".env"))
attempt("hardlink", hardlink)
attempt("rename", rename)
attempt("procfd", procfd)
attempt("mmap", mapped)
attempt("sendfile", sendfile)
attempt("dir-moved-in", lambda: rd("cfg/.env.local"))
attempt("editor-rename", lambda: rd("id_rsa"))
attempt("nested", lambda: rd("home/.aws/credentials"))
attempt("harmless", lambda: rd("notes.txt"))
open("own.env", "w").write("MINE")
attempt("own", lambda: rd("own.env"))
`

// TestSecretGuardLateSecrets: a command starts, then a process outside the
// sandbox writes secrets into the workspace — a .env, another renamed
// back and forth by the command, a directory moved in, a key put in place
// by rename as editors do, a credentials file in a new directory. The
// command reads none of their bytes by path, hard link, rename,
// /proc/self/fd, mmap or sendfile; a harmless file written meanwhile and
// a secret it wrote itself it reads; the test (outside) still reads
// every secret. Without the guard, every route read the secret.
func TestSecretGuardLateSecrets(t *testing.T) {
	s := newGuardSetup(t)
	py, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	if err := unix.Mkfifo(filepath.Join(s.ws, "go"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, out := s.start(t, ctx, py, lateReadsScript)
	s.waitFile(t, "started")
	// The guard's groups stay toold's: neither the command's helper nor
	// the command holds one (a holder outliving toold would keep a
	// group, and the opens waiting on it, alive).
	for _, pid := range []int{p.HelperPid(), p.Pid()} {
		fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		for _, fd := range fds {
			if l, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name()); l == "anon_inode:[fanotify]" {
				t.Errorf("process %d of the command holds a fanotify group (fd %s)", pid, fd.Name())
			}
		}
	}

	// The secrets appear after the command started.
	s.write(t, ".env", lateSecret+"\n")
	s.write(t, ".env2", lateSecret+"\n")
	s.write(t, "notes.txt", "harmless\n")
	if err := os.MkdirAll(s.outside+"/cfg", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.outside+"/cfg/.env.local", []byte(lateSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.outside+"/cfg", s.ws+"/cfg"); err != nil {
		t.Fatal(err)
	}
	s.write(t, ".id_rsa.swp", lateSecret+"\n")
	if err := os.Rename(s.ws+"/.id_rsa.swp", s.ws+"/id_rsa"); err != nil {
		t.Fatal(err)
	}
	s.write(t, "home/.aws/credentials", lateSecret+"\n")
	s.waitMarked(t, ".env", ".env2", "cfg/.env.local", "id_rsa", "home/.aws/credentials")
	text := s.readNone(t, p, out)
	for _, want := range []string{"path REFUSED", "hardlink REFUSED", "rename REFUSED", "procfd REFUSED", "mmap REFUSED", "sendfile REFUSED",
		"dir-moved-in REFUSED", "editor-rename REFUSED", "nested REFUSED", "harmless READ b'harmless\\n'", "own READ b'MINE'"} {
		if !strings.Contains(text, want) {
			t.Errorf("want %q in the command's output:\n%s", want, text)
		}
	}
	// Outside the sandbox every secret still reads.
	for _, f := range []string{".env", ".env2", "cfg/.env.local", "id_rsa", "home/.aws/credentials"} {
		if b, err := os.ReadFile(filepath.Join(s.ws, f)); err != nil || !strings.Contains(string(b), lateSecret) {
			t.Errorf("the test could not read %s outside the sandbox: %q, %v", f, b, err)
		}
	}
	if _, denied, _ := s.guard.Stats(); denied == 0 {
		t.Errorf("the guard refused nothing")
	}
}

// heldScript opens notes.txt and, with mmap, mapped.txt before the test
// writes a secret into them and renames them to secret names, then reads
// through what it holds.
const heldScript = `import os, mmap, sys
fd = os.open("notes.txt", os.O_RDONLY)
mfd = os.open("mapped.txt", os.O_RDONLY)
m = mmap.mmap(mfd, 4096, prot=mmap.PROT_READ)
os.close(mfd)
open("started", "w").close()
open("go").read()
try:
    print("fd", repr(os.pread(fd, 100, 0)))
except Exception as e:
    print("fd REFUSED", type(e).__name__)
sys.stdout.flush()
print("mmap", repr(m[:100]))
`

// TestSecretGuardHeldBefore: a command holds a descriptor, and a mapping,
// of harmless files that a process outside later fills with a secret and
// renames to secret names. The guard kills the command (a mapping cannot
// be refused): none of the secret's bytes reach its output.
func TestSecretGuardHeldBefore(t *testing.T) {
	s := newGuardSetup(t)
	py, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	if err := unix.Mkfifo(filepath.Join(s.ws, "go"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.write(t, "notes.txt", "harmless\n")
	s.write(t, "mapped.txt", strings.Repeat("x", 4096))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, out := s.start(t, ctx, py, heldScript)
	s.waitFile(t, "started")
	for _, f := range []string{"notes.txt", "mapped.txt"} {
		fh, err := os.OpenFile(filepath.Join(s.ws, f), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt([]byte(lateSecret), 0); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	for from, to := range map[string]string{"notes.txt": ".env", "mapped.txt": "server.pem"} {
		if err := os.Rename(filepath.Join(s.ws, from), filepath.Join(s.ws, to)); err != nil {
			t.Fatal(err)
		}
	}
	s.waitMarked(t, ".env", "server.pem")
	// The command is killed; the fifo's writer must not wait for a reader.
	if fd, err := unix.Open(filepath.Join(s.ws, "go"), unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
		unix.Write(fd, []byte("go\n"))
		unix.Close(fd)
	}
	exit := p.Exit()
	text := <-out
	t.Logf("exit %s:\n%s", exit, text)
	if strings.Contains(text, lateSecret) {
		t.Errorf("the command read a secret through what it held before:\n%s", text)
	}
	if exit.Code == 0 && exit.Signal == 0 {
		t.Errorf("the command holding the secret's file ended normally (exit %s), want it killed", exit)
	}
	if _, _, killed := s.guard.Stats(); killed == 0 {
		t.Errorf("the guard killed no command")
	}
}

// childGuard is the guard a test's child process (this test binary, run
// again) holds on dir: it writes dir/ready once the guard is open, and
// marked receives each mark. The guard lives until the child is killed
// or the test ends.
func childGuard(t *testing.T, dir string) (*sandbox.Netns, <-chan struct{}) {
	t.Helper()
	netns, err := sandbox.OpenNetns("")
	if err != nil {
		t.Fatal(err)
	}
	marked := make(chan struct{}, 1)
	g, err := sandbox.OpenSecretGuard(sandbox.SecretGuardConfig{Roots: []string{dir}, Sensitive: secretNames, Netns: netns.File(),
		OnMark: func(string, time.Time) { marked <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if err := os.WriteFile(dir+"/ready", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return netns, marked
}

// TestSecretGuardGoneAllows: a guard's process that dies leaves no mark
// behind — the kernel closes its fanotify group with it, and a host
// process's open of a file it had marked succeeds. The guard runs in a
// child (this test binary, SECRET_GUARD_CHILD), killed with SIGKILL as a
// crashed toold would be.
func TestSecretGuardGoneAllows(t *testing.T) {
	if dir := os.Getenv("SECRET_GUARD_CHILD"); dir != "" {
		_, marked := childGuard(t, dir)
		<-marked
		os.WriteFile(dir+"/marked", nil, 0o600)
		select {} // until killed
	}
	isolation(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestSecretGuardGoneAllows$", "-test.v")
	child.Env = append(os.Environ(), "SECRET_GUARD_CHILD="+dir)
	var childOut strings.Builder
	child.Stdout, child.Stderr = &childOut, &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	poll := func(what, name string) {
		testenv.Poll(t, time.Minute, what, func() bool {
			_, err := os.Stat(filepath.Join(dir, name))
			return err == nil
		})
	}
	poll("the child's guard", "ready")
	if err := os.WriteFile(dir+"/.env", []byte(lateSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	poll("the child marking .env", "marked")
	child.Process.Kill()
	child.Wait()
	cat := exec.Command("cat", dir+"/.env")
	var catOut strings.Builder
	cat.Stdout = &catOut
	if err := cat.Start(); err != nil {
		t.Fatal(err)
	}
	catDone := make(chan error, 1)
	go func() { catDone <- cat.Wait() }()
	if err := <-catDone; err != nil || catOut.String() != lateSecret {
		t.Fatalf("cat after the guard's process was killed: %v, %q (child: %s)", err, catOut.String(), childOut.String())
	}
}

// ownScript writes a .env of its own, reads it back, keeps it open and
// waits; then reads it again through what it holds.
const ownScript = `import os
open(".env", "w").write("MINE\n")
print("own", repr(open(".env").read()), flush=True)
fd = os.open(".env", os.O_RDONLY)
open("started", "w").close()
open("go").read()
print("after", repr(os.pread(fd, 100, 0)))
`

// TestSecretGuardOwnFileWrittenOutside: a .env a command wrote itself is
// its own (it reads it back); once a process outside the sandbox writes a
// secret into it, the command holding it is killed before it reads that.
func TestSecretGuardOwnFileWrittenOutside(t *testing.T) {
	s := newGuardSetup(t)
	py, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	if err := unix.Mkfifo(filepath.Join(s.ws, "go"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, out := s.start(t, ctx, py, ownScript)
	s.waitFile(t, "started")
	s.waitMarked(t, ".env")
	f, err := os.OpenFile(filepath.Join(s.ws, ".env"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(lateSecret + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	testenv.Poll(t, time.Minute, "the guard killing the holder", func() bool {
		_, _, killed := s.guard.Stats()
		return killed > 0
	})
	if fd, err := unix.Open(filepath.Join(s.ws, "go"), unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
		unix.Write(fd, []byte("go\n"))
		unix.Close(fd)
	}
	exit := p.Exit()
	text := <-out
	t.Logf("exit %s:\n%s", exit, text)
	if !strings.Contains(text, "own 'MINE\\n'") {
		t.Errorf("the command could not read the .env it wrote:\n%s", text)
	}
	if strings.Contains(text, lateSecret) {
		t.Errorf("the command read what a process outside wrote into its file:\n%s", text)
	}
}

// homeReadsScript waits (fifo "go") until the test wrote secrets into the
// home directory and new directories of the workspace, then reads them.
const homeReadsScript = `import os, sys
home = sys.argv[1]
open("started", "w").close()
open("go").read()
def attempt(label, p):
    try:
        with open(p, "rb") as f:
            print(label, "READ", repr(f.read()))
    except Exception as e:
        print(label, "REFUSED", type(e).__name__)
attempt("ssh-made-later", home + "/.ssh/id_ed25519")
attempt("aws-made-later", home + "/.aws/credentials")
attempt("gcloud-below-config", home + "/.config/gcloud/adc.json")
attempt("deep-new-dirs", "a/b/c/d/.env")
attempt("pem-in-home", home + "/server.pem")
attempt("harmless", home + "/.config/notes.txt")
`

// TestSecretGuardHomeAndNewDirs: with the home directory watched only on
// the way to its secrets (HomePaths) and the workspace whole, a command
// started first reads none of the secrets written afterwards — in a
// ~/.ssh and a ~/.aws made after it started, below an existing ~/.config,
// in the home directory itself, and at the end of a chain of new
// directories of the workspace made at once (each is watched before it is
// read) — and still reads a harmless file. Without the guard each read
// would succeed (the policy hides none of them).
func TestSecretGuardHomeAndNewDirs(t *testing.T) {
	s := newGuardSetupWith(t, func(c *sandbox.SecretGuardConfig, home string) {
		c.Homes = []string{home}
		c.HomePaths = []string{".ssh", ".aws/credentials", ".config/gcloud"}
		c.Skip = func(name string) bool { return name == "node_modules" }
		c.Sensitive = func(p string) bool {
			return secretNames(p) || p == home+"/.ssh" || strings.HasPrefix(p, home+"/.ssh/") ||
				p == home+"/.config/gcloud" || strings.HasPrefix(p, home+"/.config/gcloud/")
		}
	})
	py, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	if err := os.MkdirAll(s.home+"/.config", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(s.ws, "go"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, out := s.start(t, ctx, py, homeReadsScript, s.home)
	s.waitFile(t, "started")
	files := []string{s.home + "/.ssh/id_ed25519", s.home + "/.aws/credentials", s.home + "/.config/gcloud/adc.json",
		s.ws + "/a/b/c/d/.env", s.home + "/server.pem"}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(lateSecret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(s.home+"/.config/notes.txt", []byte("harmless\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.waitMarked(t, files...)
	text := s.readNone(t, p, out)
	for _, want := range []string{"ssh-made-later REFUSED", "aws-made-later REFUSED", "gcloud-below-config REFUSED",
		"deep-new-dirs REFUSED", "pem-in-home REFUSED", "harmless READ b'harmless\\n'"} {
		if !strings.Contains(text, want) {
			t.Errorf("want %q in the command's output:\n%s", want, text)
		}
	}
}
