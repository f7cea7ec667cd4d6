// Package image builds toold's OCI container image without a container
// daemon or a registry, with github.com/google/go-containerregistry: one
// layer holding toold, toolctl and toold-helper (static binaries) and the
// directories toold uses, appended to an empty base or to an image the
// user already has (their toolbox), and written as an OCI archive that
// `podman load` and `skopeo copy oci-archive:` accept.
//
// The build is reproducible: every timestamp is the given Created time
// (SOURCE_DATE_EPOCH), entries are in a fixed order with fixed owners and
// modes, and the archive itself is written the same way, so the same
// inputs give the same bytes.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's defaults. Socket, Workspace and StateDir are meant to be
// volumes; nothing else is written, so the root filesystem can be
// read-only. deploy/kubernetes relies on them.
const (
	// UID and GID are toold's numeric user and group (distroless "nonroot").
	UID = 65532
	GID = 65532
	// BinDir holds toold, toolctl and toold-helper.
	BinDir = "/usr/local/bin"
	// Socket is the unix socket the agent connects to (TOOLD_SOCKET).
	Socket = "/run/toold/toold.sock"
	// Workspace is the directory the tools work in (TOOLD_WORKSPACE).
	Workspace = "/workspace"
	// StateDir keeps command outputs and the commands' temp dir
	// (TOOLD_STATE_DIR); it is also HOME.
	StateDir = "/var/lib/toold"
)

// Binaries are the programs the image installs in BinDir, by name.
var Binaries = []string{"toold", "toolctl", "toold-helper"}

// Options say what to build.
type Options struct {
	// BinDir is a host directory holding the static binaries named in
	// Binaries.
	BinDir string
	// Base is an OCI archive, an OCI image layout directory or a Docker
	// archive to append toold's layer to; empty means an empty base (no
	// shell: toold starts without terminal_operations).
	Base string
	// Version is toold's version (a label).
	Version string
	// Created is every timestamp in the image (SOURCE_DATE_EPOCH).
	Created time.Time
	// Arch is the architecture of the binaries (default runtime.GOARCH).
	Arch string
	// Extra are more files of toold's layer (tests, a base's busybox).
	Extra []File
}

// File is one entry of a layer.
type File struct {
	// Name is the path in the image, without a leading slash.
	Name string
	// Mode holds the permission bits; Dir and Link select the type.
	Mode     int64
	Dir      bool
	Link     string // symlink target
	UID, GID int
	// Data is a regular file's content.
	Data []byte
}

// Build returns the image for o. The returned close function releases what
// reading the base needed; call it after the image was written.
func Build(o Options) (img v1.Image, closeBase func(), err error) {
	closeBase = func() {}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	base := empty.Image
	if o.Base != "" {
		if base, closeBase, err = ReadImage(o.Base); err != nil {
			return nil, nil, err
		}
		defer func() {
			if err != nil {
				closeBase()
			}
		}()
	}
	files, err := tooldFiles(o)
	if err != nil {
		return nil, nil, err
	}
	layer, err := Layer(files, o.Created)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := base.ConfigFile()
	if err != nil {
		return nil, nil, fmt.Errorf("base config: %w", err)
	}
	cfg = cfg.DeepCopy()
	if o.Base != "" && cfg.Architecture != "" && cfg.Architecture != o.Arch {
		return nil, nil, fmt.Errorf("base %s is for %s, the binaries for %s", o.Base, cfg.Architecture, o.Arch)
	}
	cfg.OS, cfg.Architecture = "linux", o.Arch
	cfg.RootFS.Type = "layers"
	cfg.Config = containerConfig(cfg.Config, o)
	img, err = mutate.ConfigFile(base, cfg)
	if err != nil {
		return nil, nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: o.Created},
			CreatedBy: "toold image build: " + strings.Join(Binaries, ", ") + " in " + BinDir,
			Comment:   "toold " + o.Version,
		},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.CreatedAt(img, v1.Time{Time: o.Created}); err != nil {
		return nil, nil, err
	}
	return img, closeBase, nil
}

// containerConfig is the runtime configuration: toold as the numeric
// non-root user, its defaults as TOOLD_* variables (which flags override;
// an empty value lets a config file decide), the base's PATH kept.
func containerConfig(c v1.Config, o Options) v1.Config {
	env := map[string]string{}
	var order []string
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		if _, seen := env[k]; !seen {
			order = append(order, k)
		}
		env[k] = v
	}
	set := func(k, v string) {
		if _, seen := env[k]; !seen {
			order = append(order, k)
		}
		env[k] = v
	}
	if env["PATH"] == "" {
		set("PATH", BinDir+":/usr/bin:/bin")
	} else if !slices.Contains(filepath.SplitList(env["PATH"]), BinDir) {
		set("PATH", BinDir+":"+env["PATH"])
	}
	set("HOME", StateDir)
	set("TOOLD_SOCKET", Socket)
	set("TOOLD_WORKSPACE", Workspace)
	set("TOOLD_STATE_DIR", StateDir)
	set("TOOLD_LOG_FORMAT", "json")
	c.Env = nil
	for _, k := range order {
		c.Env = append(c.Env, k+"="+env[k])
	}
	c.User = fmt.Sprintf("%d:%d", UID, GID)
	c.Entrypoint = []string{BinDir + "/toold"}
	c.Cmd = nil
	c.WorkingDir = Workspace
	c.StopSignal = "SIGTERM"
	c.Volumes = map[string]struct{}{Workspace: {}, filepath.Dir(Socket): {}, StateDir: {}}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels["org.opencontainers.image.title"] = "toold"
	c.Labels["org.opencontainers.image.description"] = "tool-execution sidecar for LLM agents"
	c.Labels["org.opencontainers.image.version"] = o.Version
	c.Labels["org.opencontainers.image.created"] = o.Created.UTC().Format(time.RFC3339)
	return c
}

// tooldFiles lists toold's layer: its binaries (root-owned, so toold
// cannot change them), the volume directories owned by toold's user, and
// on an empty base a passwd and group naming that user.
func tooldFiles(o Options) ([]File, error) {
	dir := func(name string, mode int64, uid int) File {
		return File{Name: name, Dir: true, Mode: mode, UID: uid, GID: uid}
	}
	bin := strings.TrimPrefix(BinDir, "/")
	files := []File{dir("usr", 0o755, 0), dir("usr/local", 0o755, 0), dir(bin, 0o755, 0)}
	for _, name := range Binaries {
		b, err := os.ReadFile(filepath.Join(o.BinDir, name))
		if err != nil {
			return nil, err
		}
		if !isStatic(b) {
			return nil, fmt.Errorf("%s is not a static binary (build with CGO_ENABLED=0)", name)
		}
		files = append(files, File{Name: bin + "/" + name, Mode: 0o755, Data: b})
	}
	files = append(files,
		dir(strings.TrimPrefix(Workspace, "/"), 0o755, UID),
		dir("run", 0o755, 0), dir(strings.TrimPrefix(filepath.Dir(Socket), "/"), 0o750, UID),
		dir("var", 0o755, 0), dir("var/lib", 0o755, 0), dir(strings.TrimPrefix(StateDir, "/"), 0o700, UID),
	)
	if o.Base == "" {
		files = append(files, dir("etc", 0o755, 0),
			File{Name: "etc/passwd", Mode: 0o644, Data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:toold:%s:/sbin/nologin\n", UID, GID, StateDir)},
			File{Name: "etc/group", Mode: 0o644, Data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", GID)},
		)
	}
	return append(files, o.Extra...), nil
}

// isStatic reports whether b is an ELF executable without a program
// interpreter (PT_INTERP): a static binary that runs on an empty base.
func isStatic(b []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN
}

// Layer returns a gzip-compressed OCI layer of files, in their order, every
// entry stamped with created. The same files give the same bytes.
func Layer(files []File, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		name := strings.TrimPrefix(f.Name, "/")
		if name == "" || strings.Contains("/"+name+"/", "/../") {
			return nil, fmt.Errorf("bad layer path %q", f.Name)
		}
		h := &tar.Header{
			Name: name, Mode: f.Mode, Uid: f.UID, Gid: f.GID, ModTime: created,
			Typeflag: tar.TypeReg, Size: int64(len(f.Data)), Format: tar.FormatPAX,
		}
		switch {
		case f.Dir:
			h.Typeflag, h.Name, h.Size = tar.TypeDir, name+"/", 0
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f.Link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
}

// WriteOCIArchive writes img as an OCI archive (a tar of an OCI image
// layout: oci-layout, index.json, blobs/sha256/...) named name (e.g.
// "toold:0.1.0", the org.opencontainers.image.ref.name annotation, which
// podman load uses as the image's name). Entries are written in a fixed
// order stamped with created, so the same image gives the same bytes.
func WriteOCIArchive(w io.Writer, img v1.Image, name string, created time.Time) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	mdigest, err := img.Digest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cdigest, err := img.ConfigName()
	if err != nil {
		return err
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType:   mt,
			Size:        int64(len(manifest)),
			Digest:      mdigest,
			Annotations: map[string]string{"org.opencontainers.image.ref.name": name},
		}},
	})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	hdr := func(name string, size int64, dir bool) *tar.Header {
		h := &tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if dir {
			h.Mode, h.Typeflag = 0o755, tar.TypeDir
		}
		return h
	}
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(hdr(name, int64(len(data)), false)); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(hdr(d, 0, true)); err != nil {
			return err
		}
	}
	if err := put("blobs/sha256/"+mdigest.Hex, manifest); err != nil {
		return err
	}
	if err := put("blobs/sha256/"+cdigest.Hex, cfg); err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	seen := map[v1.Hash]bool{}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		size, err := l.Size()
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(hdr("blobs/sha256/"+d.Hex, size, false)); err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		n, err := io.Copy(tw, rc)
		rc.Close()
		if err != nil {
			return err
		}
		if n != size {
			return fmt.Errorf("layer %s: %d bytes, its descriptor says %d", d, n, size)
		}
	}
	return tw.Close()
}

// WriteFile writes img as an OCI archive to path, atomically.
func WriteFile(path string, img v1.Image, name string, created time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := WriteOCIArchive(f, img, name, created); err != nil {
		f.Close()
		return err
	}
	if err := errors.Join(f.Chmod(0o644), f.Close()); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
