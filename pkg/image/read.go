package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ReadImage reads a base image from p: an OCI image layout directory, an
// OCI archive (a tar of one, as `podman save --format oci-archive` and
// WriteOCIArchive write), or a Docker archive (`docker save`, `podman
// save`). An index with several images yields the one for linux and this
// machine's architecture. Layers are read lazily: call closeImage once the
// image is no longer used.
func ReadImage(p string) (img v1.Image, closeImage func(), err error) {
	closeImage = func() {}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, nil, fmt.Errorf("base image: %w", err)
	}
	if fi.IsDir() {
		img, err = fromLayout(p)
		return img, closeImage, err
	}
	oci, err := isOCIArchive(p)
	if err != nil {
		return nil, nil, err
	}
	if !oci {
		img, err = tarball.ImageFromPath(p, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("base image %s: neither an OCI archive nor a Docker archive: %w", p, err)
		}
		return img, closeImage, nil
	}
	dir, err := os.MkdirTemp("", "toold-base-")
	if err != nil {
		return nil, nil, err
	}
	closeImage = func() { os.RemoveAll(dir) }
	if err := extractLayout(p, dir); err != nil {
		closeImage()
		return nil, nil, err
	}
	if img, err = fromLayout(dir); err != nil {
		closeImage()
		return nil, nil, err
	}
	return img, closeImage, nil
}

// fromLayout reads the image of an OCI layout for this platform.
func fromLayout(dir string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("base image %s: %w", dir, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var candidates []v1.Descriptor
	for _, d := range im.Manifests {
		if d.MediaType.IsImage() && (d.Platform == nil || (d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH)) {
			candidates = append(candidates, d)
		}
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("base image %s: no linux/%s image in its index", dir, runtime.GOARCH)
	}
	return idx.Image(candidates[0].Digest)
}

// isOCIArchive reports whether the tar at p holds an OCI layout.
func isOCIArchive(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("base image %s: not a tar archive or layout directory: %w", p, err)
		}
		if path.Clean(h.Name) == "oci-layout" {
			return true, nil
		}
	}
}

// extractLayout extracts the OCI layout in the tar at p into dir. Only the
// layout's own files are taken (oci-layout, index.json, blobs/ALG/HEX),
// as regular files; anything else, links included, is an error, so a
// hostile archive cannot write outside dir.
func extractLayout(p, dir string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("base image %s: %w", p, err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if h.Typeflag == tar.TypeDir {
			if name == "blobs" || (path.Dir(name) == "blobs" && validPart(path.Base(name))) || name == "." {
				continue
			}
			return fmt.Errorf("base image %s: unexpected directory %q in an OCI archive", p, h.Name)
		}
		parts := strings.Split(name, "/")
		ok := h.Typeflag == tar.TypeReg && (name == "oci-layout" || name == "index.json" ||
			(len(parts) == 3 && parts[0] == "blobs" && validPart(parts[1]) && validPart(parts[2])))
		if !ok {
			return fmt.Errorf("base image %s: unexpected entry %q in an OCI archive", p, h.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("base image %s: %w", p, err)
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}

// validPart reports whether s is a plain name: letters, digits, '-', '_'.
func validPart(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
