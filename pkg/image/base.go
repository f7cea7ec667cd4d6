package image

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BusyboxBase returns a small base image with a userland: the static
// busybox at path (Debian's busybox-static: /bin/busybox) as /bin/busybox,
// a /bin link for each of its applets (sh, ls, cat, ...), a passwd and
// group naming toold's user, and /tmp. It stands for the toolbox image a
// user appends toold to (make image BASE=...), and lets the tests run
// commands in a container; it is reproducible like Build.
func BusyboxBase(path string, created time.Time) (v1.Image, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !isStatic(b) {
		return nil, fmt.Errorf("%s is not a static binary (Debian: busybox-static)", path)
	}
	out, err := exec.Command(path, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", path, err)
	}
	files := []File{
		{Name: "bin", Dir: true, Mode: 0o755},
		{Name: "bin/busybox", Mode: 0o755, Data: b},
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "busybox" || strings.ContainsAny(applet, "/.") {
			continue
		}
		files = append(files, File{Name: "bin/" + applet, Link: "busybox"})
	}
	files = append(files,
		File{Name: "etc", Dir: true, Mode: 0o755},
		File{Name: "etc/passwd", Mode: 0o644, Data: fmt.Appendf(nil, "root:x:0:0:root:/root:/bin/sh\nnonroot:x:%d:%d:toold:%s:/bin/sh\n", UID, GID, StateDir)},
		File{Name: "etc/group", Mode: 0o644, Data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", GID)},
		File{Name: "tmp", Dir: true, Mode: 0o1777},
	)
	layer, err := Layer(files, created)
	if err != nil {
		return nil, err
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		OS: "linux", Architecture: runtime.GOARCH, RootFS: v1.RootFS{Type: "layers"},
		Config: v1.Config{Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, Cmd: []string{"sh"}},
	})
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: "busybox base: " + path + " " + firstLine(b)},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	return mutate.CreatedAt(img, v1.Time{Time: created})
}

// firstLine returns busybox's version banner, when its binary holds one.
func firstLine(b []byte) string {
	i := bytes.Index(b, []byte("BusyBox v"))
	if i < 0 {
		return ""
	}
	end := bytes.IndexAny(b[i:], "\x00\n")
	if end < 0 || end > 80 {
		return ""
	}
	return string(b[i : i+end])
}
