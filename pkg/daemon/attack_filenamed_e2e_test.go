package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// TestAttackFileToolsGitNamed: the person's repository names programs in
// its work tree — core.hooksPath=.husky with a pre-commit hook, a clean
// filter "sh scripts/clean.sh" — and has a submodule below node_modules/
// (node_modules/dep, which the walk for git directories does not enter).
// In YOLO, the model writes them with the file tools rather than a
// command: write_file, edit_file, apply_patch (update and add), delete
// then write, move onto, move away then write anew, make_dir and
// write_file inside the submodule's .git, through a symlink too. Then the
// person's git add, status and commit run on the host.
//
// The file tools refuse every change of what the sandbox makes read-only
// for commands (tools.GitNamed, computed by the terminal manager), by the
// file opened, with the git directories' DENIED error and hint; nothing of
// the attempts runs; ordinary writes beside them still work. With
// terminal.git_writable the same writes go through.
func TestAttackFileToolsGitNamed(t *testing.T) {
	for _, writable := range []bool{false, true} {
		t.Run(fmt.Sprintf("git_writable=%v", writable), func(t *testing.T) {
			g := newGitGuard(t, daemontest.WithConfig(func(c *config.Config) { c.Terminal.GitWritable = writable }))
			g.c.approve = false
			hook := "#!/bin/sh\nexit 0\n"
			clean := "#!/bin/sh\ncat\n"
			g.write(".husky/pre-commit", hook)
			g.write("scripts/clean.sh", clean)
			g.write(".gitattributes", "*.md filter=tidy\n")
			os.Chmod(filepath.Join(g.ws, ".husky/pre-commit"), 0o755)
			os.Chmod(filepath.Join(g.ws, "scripts/clean.sh"), 0o755)
			g.hostGit(".", "config", "core.hooksPath", ".husky")
			g.hostGit(".", "config", "filter.tidy.clean", "sh scripts/clean.sh")
			lib := t.TempDir()
			for _, args := range [][]string{{"init", "-q", "."}, {"-c", "user.name=p", "-c", "user.email=p@e", "commit", "-q", "--allow-empty", "-m", "lib"}} {
				if out, err := newHostGit(lib, args...).CombinedOutput(); err != nil {
					t.Fatalf("%v: %v %s", args, err, out)
				}
			}
			if out, err := newHostGit(g.ws, "-c", "protocol.file.allow=always", "clone", "-q", lib, "node_modules/dep").CombinedOutput(); err != nil {
				t.Fatalf("clone: %v %s", err, out)
			}
			g.hostGit(".", "add", "-A")
			g.hostGit(".", "commit", "-qm", "the person's scripts and submodule")
			os.Symlink("node_modules/dep", filepath.Join(g.ws, "deplink"))

			evil := func(name string) string {
				return fmt.Sprintf("#!/bin/sh\ntouch %s\ncat 2>/dev/null; exit 0\n", filepath.Join(g.outside, name))
			}
			fsmon := func(name string) string {
				return fmt.Sprintf("[core]\n\tfsmonitor = touch %s; false\n", filepath.Join(g.outside, name))
			}
			type step struct {
				tool string
				args map[string]any
			}
			ranWritable := 0
			for _, c := range []struct {
				name  string
				steps []step
			}{
				{"write the hook", []step{{"write_file", map[string]any{"path": ".husky/pre-commit", "content": evil("write-hook")}}}},
				{"write a new hook", []step{{"write_file", map[string]any{"path": ".husky/post-commit", "content": evil("new-hook")}}}},
				{"write the filter script", []step{{"write_file", map[string]any{"path": "scripts/clean.sh", "content": evil("write-clean")}}}},
				{"edit the filter script", []step{{"edit_file", map[string]any{"path": "scripts/clean.sh", "old_string": "cat", "new_string": "touch " + filepath.Join(g.outside, "edit-clean") + "; cat"}}}},
				{"patch the hook", []step{{"apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: .husky/pre-commit\n@@\n-exit 0\n+touch " + filepath.Join(g.outside, "patch-hook") + "\n+exit 0\n*** End Patch\n"}}}},
				{"patch adds a hook", []step{{"apply_patch", map[string]any{"input": "*** Begin Patch\n*** Add File: .husky/post-commit\n+#!/bin/sh\n+touch " + filepath.Join(g.outside, "patch-add") + "\n*** End Patch\n"}}}},
				{"delete then write the filter script", []step{
					{"delete_path", map[string]any{"path": "scripts/clean.sh"}},
					{"write_file", map[string]any{"path": "scripts/clean.sh", "content": evil("delete-write")}},
				}},
				{"move onto the filter script", []step{
					{"write_file", map[string]any{"path": "evil.sh", "content": evil("move-onto")}},
					{"move_path", map[string]any{"source": "evil.sh", "destination": "scripts/clean.sh", "overwrite": true}},
				}},
				{"move the scripts away and write anew", []step{
					{"move_path", map[string]any{"source": "scripts", "destination": "scripts-gone"}},
					{"write_file", map[string]any{"path": "scripts/clean.sh", "content": evil("move-away")}},
				}},
				{"move the hooks directory away", []step{
					{"move_path", map[string]any{"source": ".husky", "destination": "husky-gone"}},
					{"write_file", map[string]any{"path": ".husky/pre-commit", "content": evil("hooks-away")}},
				}},
				{"delete the hooks directory", []step{
					{"delete_path", map[string]any{"path": ".husky", "recursive": true}},
					{"write_file", map[string]any{"path": ".husky/pre-commit", "content": evil("hooks-deleted")}},
				}},
				{"the submodule's config", []step{{"write_file", map[string]any{"path": "node_modules/dep/.git/config", "content": fsmon("sub-config")}}}},
				{"the submodule's config through a link", []step{{"edit_file", map[string]any{"path": "deplink/.git/config", "old_string": "[core]", "new_string": fsmon("sub-link")}}}},
				{"a directory in the submodule's .git", []step{
					{"make_dir", map[string]any{"path": "node_modules/dep/.git/hooks2"}},
					{"write_file", map[string]any{"path": "node_modules/dep/.git/hooks/post-checkout", "content": evil("sub-hook")}},
				}},
			} {
				var refused []string
				for _, s := range c.steps {
					text, ok := g.tool(s.tool, s.args)
					if !ok {
						refused = append(refused, s.tool)
						if !strings.Contains(text, "DENIED") || !strings.Contains(text, "version-control tool") {
							t.Errorf("%s: %s refused without the DENIED error and its hint: %s", c.name, s.tool, text)
						}
					}
				}
				g.write("README.md", "changed by "+c.name+"\n")
				newHostGit(g.ws, "add", "README.md").Run() // the person stages: the clean filter runs
				ran := g.personsGit(".", "node_modules/dep")
				switch {
				case !writable && len(ran) > 0:
					t.Errorf("%s: the person's git ran what the file tools wrote: %v (refused: %v)", c.name, ran, refused)
				case !writable && len(refused) == 0:
					t.Errorf("%s: no step was refused", c.name)
				case writable && len(refused) > 0 && !strings.HasPrefix(c.name, "the submodule") && !strings.HasPrefix(c.name, "a directory in"):
					// git_writable lifts the check by the set (a .git by name
					// stays refused, as the git directories' check does).
					t.Errorf("%s: refused with terminal.git_writable: %v", c.name, refused)
				default:
					t.Logf("%s: refused %v, ran %v", c.name, refused, ran)
				}
				if writable {
					ranWritable += len(ran)
				}
				// The person's repository as it was, for the next attempt.
				for _, e := range ran {
					os.Remove(filepath.Join(g.outside, e))
				}
				for _, d := range []string{"scripts-gone", "husky-gone", "evil.sh", ".husky/post-commit"} {
					os.RemoveAll(filepath.Join(g.ws, d))
				}
				g.write(".husky/pre-commit", hook)
				g.write("scripts/clean.sh", clean)
				os.Chmod(filepath.Join(g.ws, ".husky/pre-commit"), 0o755)
				newHostGit(filepath.Join(g.ws, "node_modules/dep"), "config", "--unset-all", "core.fsmonitor").Run()
				os.Remove(filepath.Join(g.ws, "node_modules/dep/.git/hooks/post-checkout"))
				os.Remove(filepath.Join(g.ws, "node_modules/dep/.git/hooks2"))
			}
			if writable && ranWritable == 0 {
				t.Error("with terminal.git_writable nothing the file tools wrote ran: the canaries are not live")
			}
			// Ordinary writes beside them still work.
			for _, s := range []step{
				{"write_file", map[string]any{"path": "scripts/other.sh", "content": "#!/bin/sh\n"}},
				{"write_file", map[string]any{"path": "node_modules/dep/index.js", "content": "module.exports = 1\n"}},
				{"edit_file", map[string]any{"path": "README.md", "old_string": "changed", "new_string": "edited"}},
				{"make_dir", map[string]any{"path": "src/pkg"}},
				{"move_path", map[string]any{"source": "scripts/other.sh", "destination": "scripts/moved.sh"}},
				{"delete_path", map[string]any{"path": "scripts/moved.sh"}},
			} {
				if text, ok := g.tool(s.tool, s.args); !ok {
					t.Errorf("ordinary %s %v refused: %s", s.tool, s.args, text)
				}
			}
		})
	}
}
