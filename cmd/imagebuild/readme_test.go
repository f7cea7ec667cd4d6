package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeSidecarMarker precedes the README's sidecar recipe, which
// TestReadmeSidecarRecipe runs verbatim (cmd/toolctl's README test runs the
// other marked blocks; this one needs podman, so it lives with the
// container test).
const readmeSidecarMarker = "<!-- tested: cmd/imagebuild/readme_test.go -->"

// TestReadmeSidecarRecipe runs the README's "Run as a sidecar" block as
// printed, with bash, in a copy of the checkout (make image writes dist/,
// the block makes ws/ and run/: never in the tree), with the toolctl this
// test builds on PATH: the image is built, loaded into podman's own store,
// run with the printed flags, and toolctl health must say SERVING. The
// container and image are removed afterwards.
func TestReadmeSidecarRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image and runs a container")
	}
	podman, _ := requirePodman(t)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), readmeSidecarMarker+"\n```sh\n")
	if !ok {
		t.Fatal("the README's sidecar recipe is not marked " + readmeSidecarMarker)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("unterminated sidecar block")
	}
	for _, want := range []string{"make image", "podman load", "podman run", "--cap-drop=ALL", "toolctl"} {
		if !strings.Contains(block, want) {
			t.Fatalf("the sidecar block lost %q:\n%s", want, block)
		}
	}

	// A copy of the checkout's files (tracked and not ignored), as a
	// reader's clone has them. Short path: the socket's must fit.
	dir, err := os.MkdirTemp("", "toold-sc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	files, err := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		src := filepath.Join(repo, name)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or not a file
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin+"/", "github.com/toold/toold/cmd/toolctl").CombinedOutput(); err != nil {
		t.Fatalf("build toolctl: %v\n%s", err, out)
	}

	cleanup := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = exec.CommandContext(ctx, podman, "rm", "--force", "--time", "0", "toold").Run()
		_ = exec.CommandContext(ctx, podman, "rmi", "--force", "toold:dev").Run()
	}
	cleanup() // a container of an earlier, killed run
	t.Cleanup(cleanup)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -e -o pipefail\n"+block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		logs, _ := exec.Command(podman, "logs", "toold").CombinedOutput()
		t.Fatalf("the README's sidecar block failed: %v\n%s\ncontainer logs:\n%s", err, out, logs)
	}
	if !strings.Contains(string(out), "SERVING") {
		t.Fatalf("toolctl health did not say SERVING:\n%s", out)
	}
}
