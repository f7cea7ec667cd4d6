package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// fakeELF returns a minimal ELF executable carrying payload: static, or
// with a program interpreter (PT_INTERP) like a dynamically linked one.
func fakeELF(payload string, dynamic bool) []byte {
	var progs []elf.Prog64
	progs = append(progs, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Align: 0x1000})
	if dynamic {
		progs = append(progs, elf.Prog64{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R), Align: 1})
	}
	h := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: uint16(len(progs)),
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, h)
	binary.Write(&buf, binary.LittleEndian, progs)
	buf.WriteString(payload)
	return buf.Bytes()
}

// fakeBins writes stand-ins for the static binaries.
func fakeBins(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range Binaries {
		if err := os.WriteFile(filepath.Join(dir, b), fakeELF(b+content, false), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func archive(t *testing.T, o Options, tag string) []byte {
	t.Helper()
	img, closeBase, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	defer closeBase()
	var buf bytes.Buffer
	if err := WriteOCIArchive(&buf, img, tag, o.Created); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReproducible(t *testing.T) {
	created := time.Unix(1700000000, 0)
	bins := fakeBins(t, "v1")
	a := archive(t, Options{BinDir: bins, Version: "1", Created: created}, "toold:1")
	b := archive(t, Options{BinDir: fakeBins(t, "v1"), Version: "1", Created: created}, "toold:1")
	if !bytes.Equal(a, b) {
		t.Fatal("two builds of the same inputs differ")
	}
	for name, other := range map[string][]byte{
		"time":     archive(t, Options{BinDir: bins, Version: "1", Created: created.Add(time.Second)}, "toold:1"),
		"binaries": archive(t, Options{BinDir: fakeBins(t, "v2"), Version: "1", Created: created}, "toold:1"),
		"tag":      archive(t, Options{BinDir: bins, Version: "1", Created: created}, "toold:2"),
	} {
		if bytes.Equal(a, other) {
			t.Errorf("a different %s gave the same archive", name)
		}
	}
	// Every entry of the archive carries the fixed time.
	tr := tar.NewReader(bytes.NewReader(a))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(created) || h.Uid != 0 {
			t.Errorf("%s: time %v uid %d", h.Name, h.ModTime, h.Uid)
		}
	}
	if len(names) < 6 || names[0] != "oci-layout" || names[1] != "index.json" {
		t.Fatalf("archive entries %v", names)
	}
}

func TestImageConfigAndLayer(t *testing.T) {
	created := time.Unix(1700000000, 0)
	img, closeBase, err := Build(Options{BinDir: fakeBins(t, ""), Version: "1.2.3", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	defer closeBase()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	env := strings.Join(c.Env, "\n")
	for _, want := range []string{"TOOLD_SOCKET=/run/toold/toold.sock", "TOOLD_WORKSPACE=/workspace", "TOOLD_STATE_DIR=/var/lib/toold", "TOOLD_LOG_FORMAT=json", "HOME=/var/lib/toold", "PATH=/usr/local/bin:/usr/bin:/bin"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s: %v", want, c.Env)
		}
	}
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/usr/local/bin/toold" || len(c.Cmd) != 0 || c.WorkingDir != "/workspace" || c.StopSignal != "SIGTERM" {
		t.Fatalf("config %+v", c)
	}
	for _, v := range []string{"/workspace", "/run/toold", "/var/lib/toold"} {
		if _, ok := c.Volumes[v]; !ok {
			t.Errorf("no volume %s", v)
		}
	}
	if !cf.Created.Time.Equal(created) || cf.OS != "linux" || len(cf.History) != 1 || !cf.History[0].Created.Time.Equal(created) {
		t.Fatalf("created %v os %s history %+v", cf.Created, cf.OS, cf.History)
	}
	entries := layerEntries(t, img)
	want := map[string]string{
		"usr/local/bin/toold":        "0 755 reg",
		"usr/local/bin/toolctl":      "0 755 reg",
		"usr/local/bin/toold-helper": "0 755 reg",
		"workspace/":                 "65532 755 dir",
		"run/toold/":                 "65532 750 dir",
		"var/lib/toold/":             "65532 700 dir",
		"etc/passwd":                 "0 644 reg",
	}
	for name, w := range want {
		if entries[name] != w {
			t.Errorf("%s: %q, want %q", name, entries[name], w)
		}
	}
}

// layerEntries describes the entries of img's last layer: "uid mode type".
func layerEntries(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		typ := map[byte]string{tar.TypeReg: "reg", tar.TypeDir: "dir", tar.TypeSymlink: "link"}[h.Typeflag]
		out[h.Name] = fmt.Sprintf("%d %o %s", h.Uid, h.Mode&0o7777, typ)
	}
}

// A base in each format ReadImage takes: toold's layer goes on top, the
// base's layers and PATH stay, and no passwd is added over the base's.
func TestBaseFormats(t *testing.T) {
	created := time.Unix(1700000000, 0)
	dir := t.TempDir()
	layer, err := Layer([]File{{Name: "bin", Dir: true, Mode: 0o755}, {Name: "bin/tool", Mode: 0o755, Data: []byte("#!x")}}, created)
	if err != nil {
		t.Fatal(err)
	}
	base, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := base.ConfigFile()
	cf = cf.DeepCopy()
	cf.Config.Env = []string{"PATH=/opt/tools/bin:/bin", "LANG=C.UTF-8"}
	if base, err = mutate.ConfigFile(base, cf); err != nil {
		t.Fatal(err)
	}
	ociArchive := filepath.Join(dir, "base-oci.tar")
	if err := WriteFile(ociArchive, base, "base:1", created); err != nil {
		t.Fatal(err)
	}
	layoutDir := filepath.Join(dir, "layout")
	lp, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(base); err != nil {
		t.Fatal(err)
	}
	dockerArchive := filepath.Join(dir, "base-docker.tar")
	tag, _ := name.NewTag("base:1")
	if err := tarball.WriteToFile(dockerArchive, tag, base); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ociArchive, layoutDir, dockerArchive} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			img, closeBase, err := Build(Options{BinDir: fakeBins(t, ""), Base: p, Created: created})
			if err != nil {
				t.Fatal(err)
			}
			defer closeBase()
			layers, _ := img.Layers()
			if len(layers) != 2 {
				t.Fatalf("%d layers, want the base's and toold's", len(layers))
			}
			cf, _ := img.ConfigFile()
			env := strings.Join(cf.Config.Env, " ")
			if !strings.Contains(env, "PATH=/usr/local/bin:/opt/tools/bin:/bin") || !strings.Contains(env, "LANG=C.UTF-8") || !strings.Contains(env, "TOOLD_SOCKET=") {
				t.Fatalf("env %v", cf.Config.Env)
			}
			if _, ok := layerEntries(t, img)["etc/passwd"]; ok {
				t.Fatal("a passwd over the base's")
			}
			var buf bytes.Buffer
			if err := WriteOCIArchive(&buf, img, "toold:x", created); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Bad inputs: clear errors, nothing written outside.
func TestBadInputs(t *testing.T) {
	created := time.Unix(1700000000, 0)
	dir := t.TempDir()
	evil := filepath.Join(dir, "evil.tar")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct{ name, data string }{{"oci-layout", `{"imageLayoutVersion":"1.0.0"}`}, {"../escaped", "x"}} {
		tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg})
		tw.Write([]byte(e.data))
	}
	tw.Close()
	os.WriteFile(evil, buf.Bytes(), 0o644)
	dynamic := t.TempDir()
	for _, b := range Binaries {
		os.WriteFile(filepath.Join(dynamic, b), fakeELF("/lib64/ld-linux-x86-64.so.2", true), 0o755)
	}
	notTar := filepath.Join(dir, "not.tar")
	os.WriteFile(notTar, []byte("hello"), 0o644)
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"path escape in a base", Options{BinDir: fakeBins(t, ""), Base: evil}, `unexpected entry "../escaped"`},
		{"not an archive", Options{BinDir: fakeBins(t, ""), Base: notTar}, "not a tar archive"},
		{"missing base", Options{BinDir: fakeBins(t, ""), Base: filepath.Join(dir, "nope")}, "no such file"},
		{"dynamic binary", Options{BinDir: dynamic}, "not a static binary"},
		{"missing binary", Options{BinDir: t.TempDir()}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Created = created
			_, _, err := Build(tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "escaped")); err == nil {
		t.Fatal("the hostile archive wrote outside its directory")
	}
	if _, err := Layer([]File{{Name: "../x", Data: []byte("x")}}, created); err == nil {
		t.Fatal("a layer path with .. was accepted")
	}
}
