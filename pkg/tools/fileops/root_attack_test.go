package fileops

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// canaries are the secrets TestReadFileRootAttacks plants: none may reach a
// result.
var canaries = []string{"ENV-CANARY", "VAULT-CANARY", "SSH-CANARY", "OUTSIDE-CANARY", "HOOK-CANARY"}

// checkNoCanary fails when res carries a canary, or err is not one of
// toold's typed errors (or is an internal one).
func checkNoCanary(t *testing.T, what string, res *tools.Result, err error) {
	t.Helper()
	if err != nil {
		var e *errdefs.Error
		if !errors.As(err, &e) || errors.Is(err, errdefs.ErrInternal) {
			t.Errorf("%s: error %q (%T) is not a typed error", what, err, err)
		}
		for _, c := range canaries {
			if strings.Contains(err.Error(), c) {
				t.Errorf("%s: the error carries %s: %v", what, c, err)
			}
		}
		return
	}
	for _, c := range canaries {
		if strings.Contains(res.Text, c) {
			t.Errorf("%s: the result carries %s: %q", what, c, res.Text)
		}
	}
}

// TestReadFileRootAttacks attacks read_file on names directly in the
// workspace root, which it opens by one openat on the workspace's
// descriptor without asking the kernel the opened file's name
// (readTarget.open): symlinks to a secret, outside, dangling and in loops,
// hard links to secrets, special files, odd names and odd argument values
// (each also bound by the JSON decoder, which must agree), and, raced by a
// concurrent goroutine, a name swapped between a file and a hard link to
// .env, and the workspace directory itself renamed away and replaced by a
// symlink to a directory outside. No canary byte may reach a result, and
// every refusal is a typed error.
func TestReadFileRootAttacks(t *testing.T) {
	f, dir, home := guardedTool(t)
	outside := filepath.Join(filepath.Dir(dir), "outside")
	writeTree(t, outside, map[string]string{"notes.txt": "OUTSIDE-CANARY\n"})
	writeTree(t, dir, map[string]string{"plain.txt": "harmless\n"})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(outside, "notes.txt"), dir+"/out-link"))
	must(os.Symlink(outside, dir+"/out-dir"))
	must(os.Symlink(".env", dir+"/env-link"))
	must(os.Symlink(home+"/.ssh/id_rsa", dir+"/ssh-link"))
	must(os.Symlink("missing", dir+"/dangling"))
	must(os.Symlink("loop-b", dir+"/loop-a"))
	must(os.Symlink("loop-a", dir+"/loop-b"))
	must(os.Link(dir+"/.env", dir+"/env-hard"))
	must(os.Link(home+"/.ssh/id_rsa", dir+"/ssh-hard"))
	must(syscall.Mkfifo(dir+"/fifo", 0o644))
	must(syscall.Mknod(dir+"/dev", syscall.S_IFCHR|0o644, int(1<<8|3))) // /dev/null's numbers
	l, err := net.Listen("unix", dir+"/sock")
	must(err)
	defer l.Close()
	must(os.Mkdir(dir+"/adir", 0o755))

	for _, c := range []struct {
		args  string
		class error // nil: it reads
	}{
		{`{"path":"out-link"}`, errdefs.ErrDenied},
		{`{"path":"out-dir/notes.txt"}`, errdefs.ErrDenied},
		{`{"path":"env-link"}`, errdefs.ErrDenied},
		{`{"path":"ssh-link"}`, errdefs.ErrDenied},
		{`{"path":"env-hard"}`, errdefs.ErrDenied},
		{`{"path":"ssh-hard"}`, errdefs.ErrDenied},
		{`{"path":".env"}`, errdefs.ErrDenied},
		{`{"path":"dangling"}`, errdefs.ErrFailed},
		{`{"path":"loop-a"}`, errdefs.ErrFailed},
		{`{"path":"fifo"}`, errdefs.ErrFailed},
		{`{"path":"dev"}`, errdefs.ErrFailed},
		{`{"path":"sock"}`, errdefs.ErrFailed},
		{`{"path":"adir"}`, errdefs.ErrFailed},
		{`{"path":"."}`, errdefs.ErrFailed},
		{`{"path":".."}`, errdefs.ErrDenied},
		{`{"path":"../outside/notes.txt"}`, errdefs.ErrDenied},
		{`{"path":"\u002e\u002e/outside/notes.txt"}`, errdefs.ErrDenied},
		{`{"path":"` + outside + `/notes.txt"}`, errdefs.ErrDenied},
		{`{"path":"/proc/self/root` + outside + `/notes.txt"}`, errdefs.ErrDenied},
		{`{"path":"/proc/self/cwd/../outside/notes.txt"}`, errdefs.ErrDenied},
		{`{"path":"/proc/self/root` + dir + `/.env"}`, errdefs.ErrDenied},
		{`{"path":"plain.txt\u0000/../.env"}`, errdefs.ErrInvalidArgument},
		{`{"path":".env\u0000"}`, errdefs.ErrInvalidArgument},
		{`{"path":"` + strings.Repeat("x", 300) + `"}`, errdefs.ErrFailed},
		{`{"path":"` + strings.Repeat("d/", 3000) + `x"}`, errdefs.ErrFailed},
		{`{"path":"\udcff.txt"}`, errdefs.ErrFailed},
		{`{"path":""}`, errdefs.ErrInvalidArgument},
		{`{}`, errdefs.ErrInvalidArgument},
		// Argument values the fast binder passes on, or leaves to the
		// decoder.
		{`{"path":"plain.txt","path":".env"}`, errdefs.ErrDenied},
		{`{"path":".env","path":"plain.txt"}`, nil},
		{`{"path":"plain.txt","Path":".env"}`, nil},
		{`{"PATH":".env"}`, errdefs.ErrDenied},
		{`{"file_path":".env"}`, errdefs.ErrInvalidArgument},
		{`{"absolute_path":"` + dir + `/.env"}`, errdefs.ErrInvalidArgument},
		{`{"path":"env-link","offset":"10"}`, errdefs.ErrDenied},
		{`{"path":"plain.txt","offset":"10"}`, errdefs.ErrInvalidArgument}, // past its end
		{`{"path":"plain.txt","limit":1e999}`, errdefs.ErrInvalidArgument},
		{`{"path":"env-hard","limit":1e999}`, errdefs.ErrInvalidArgument},
		{`{"path":"plain.txt","offset":-5,"limit":-1}`, errdefs.ErrInvalidArgument},
		{`{"path":"plain.txt","offset":1e300}`, errdefs.ErrInvalidArgument},
		{`{"path":"plain.txt","limit":99999999999999999999999}`, nil},
		{`{"path":"plain.txt","offset":0.5}`, errdefs.ErrInvalidArgument},
		{`{"path":"plain.txt","offset":true}`, errdefs.ErrInvalidArgument},
		{`{"path":["env-link"]}`, errdefs.ErrInvalidArgument},
		{`{"path":{"a":".env"}}`, errdefs.ErrInvalidArgument},
		{`{"path":null}`, errdefs.ErrInvalidArgument},
	} {
		t.Run(c.args, func(t *testing.T) {
			a, err := tools.DecodeArguments(c.args)
			if err != nil {
				t.Fatal(err)
			}
			call := &tools.Call{ID: "c1", Tool: ToolName, Operation: "read_file", Args: a}
			var fast, slow readFileArgs
			fastErr, slowErr := fast.bind(call), bind(call, &slow)
			if fast != slow || fmt.Sprint(fastErr) != fmt.Sprint(slowErr) {
				t.Errorf("bound %+v (%v), the decoder gives %+v (%v)", fast, fastErr, slow, slowErr)
			}
			res, err := f.Run(t.Context(), call, nil)
			checkNoCanary(t, c.args, res, err)
			switch {
			case c.class == nil && err != nil:
				t.Errorf("error %v, want a read", err)
			case c.class != nil && !errors.Is(err, c.class):
				t.Errorf("error %v (result %v), want %v", err, res, c.class)
			}
		})
	}
}

// TestReadFileRootRaces reads names in the workspace root while another
// goroutine swaps them: a file and a hard link to .env renamed in turn
// onto the name read, and the workspace directory itself renamed away and
// replaced by a symlink to a directory outside holding a file of the same
// name (what the kernel name check caught before names in the root were
// opened without it: the read now goes through the workspace's own
// descriptor, so it reads the workspace's file or nothing).
func TestReadFileRootRaces(t *testing.T) {
	const tries = 300
	t.Run("hard link to .env renamed in", func(t *testing.T) {
		f, dir, _ := guardedTool(t)
		writeTree(t, dir, map[string]string{"a.txt": "harmless\n"})
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				tmp := dir + "/a.txt.swap"
				os.Remove(tmp)
				if i%2 == 0 {
					os.Link(dir+"/.env", tmp)
				} else {
					os.WriteFile(tmp, []byte("harmless\n"), 0o644)
				}
				os.Rename(tmp, dir+"/a.txt")
			}
		})
		reads := 0
		for range tries {
			res, err := run(t, f, "read_file", `{"path":"a.txt"}`)
			checkNoCanary(t, "a.txt", res, err)
			if err == nil {
				reads++
			}
		}
		close(done)
		wg.Wait()
		t.Logf("%d of %d reads returned the harmless file, the rest were refused", reads, tries)
	})
	t.Run("workspace renamed and replaced", func(t *testing.T) {
		f, dir, _ := guardedTool(t)
		writeTree(t, dir, map[string]string{"notes.txt": "harmless\n"})
		outside := filepath.Join(filepath.Dir(dir), "outside")
		writeTree(t, outside, map[string]string{"notes.txt": "OUTSIDE-CANARY\n"})
		moved := dir + ".moved"
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			defer func() {
				// Put the workspace back for its cleanup.
				if _, err := os.Stat(moved); err == nil {
					os.Remove(dir)
					os.Rename(moved, dir)
				}
			}()
			for {
				select {
				case <-done:
					return
				default:
				}
				if os.Rename(dir, moved) != nil {
					t.Error("cannot rename the workspace")
					return
				}
				os.Symlink(outside, dir)
				os.Remove(dir)
				os.Rename(moved, dir)
			}
		})
		reads := 0
		for range tries {
			res, err := run(t, f, "read_file", `{"path":"notes.txt"}`)
			checkNoCanary(t, "notes.txt", res, err)
			if err == nil {
				reads++
			}
		}
		close(done)
		wg.Wait()
		t.Logf("%d of %d reads returned the workspace's file, the rest were refused", reads, tries)
	})
}

// TestReadFileRootRenamedOverAtOpen makes TestReadFileRootRaces' narrowest
// window certain: a.txt, a hard link to .env, is opened, and a harmless
// file is renamed over it before the open file's status is read, so the
// status says one link — .env's. The read must be refused, not taken for
// a file whose one name is the one checked. Not parallel: the hook is the
// package's.
func TestReadFileRootRenamedOverAtOpen(t *testing.T) {
	f, dir, _ := guardedTool(t)
	if err := os.Link(dir+"/.env", dir+"/a.txt"); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"harmless.txt": "harmless\n"})
	openedHook = func(name string) {
		if name == "a.txt" {
			if err := os.Rename(dir+"/harmless.txt", dir+"/a.txt"); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { openedHook = nil }()
	res, err := run(t, f, "read_file", `{"path":"a.txt"}`)
	checkNoCanary(t, "a.txt", res, err)
	if !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("error %v, want %v", err, errdefs.ErrDenied)
	}
}
