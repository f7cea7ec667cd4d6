// Command imagebuild builds toold's container image without a container
// daemon or a registry (see pkg/image and docs/deploy.md); `make image`
// runs it.
//
//	imagebuild -bin DIR -name toold:VERSION -o dist/image.tar [-base IMAGE]
//	imagebuild -busybox /bin/busybox -name toold-base:busybox -o dist/base-busybox.tar
//
// The first writes toold's image: the static binaries in DIR (toold,
// toolctl, toold-helper) as one layer on an empty base, or on IMAGE (an OCI
// archive, OCI layout directory or Docker archive). The second writes a
// small base with a busybox userland, for the tests and as an example of a
// toolbox base. Both write an OCI archive for `podman load -i`, with every
// timestamp at $SOURCE_DATE_EPOCH (required), so builds are byte-for-byte
// reproducible.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/toold/toold/pkg/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	var (
		out     = fs.String("o", "dist/image.tar", "write the OCI archive here")
		name    = fs.String("name", "", "the image's name, e.g. toold:0.1.0 (required)")
		bin     = fs.String("bin", "", "directory holding the static toold, toolctl and toold-helper")
		base    = fs.String("base", "", "append to this image (OCI archive, OCI layout dir or Docker archive) instead of an empty base")
		version = fs.String("version", "", "toold's version (a label)")
		busybox = fs.String("busybox", "", "instead, build a base image with this static busybox as its userland")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *name == "" {
		return fmt.Errorf("-name is required")
	}
	epoch, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
	if err != nil {
		return fmt.Errorf("SOURCE_DATE_EPOCH must be set to a Unix time (e.g. the commit's: git log -1 --format=%%ct): %w", err)
	}
	created := time.Unix(epoch, 0).UTC()
	var img v1.Image
	switch {
	case *busybox != "":
		if img, err = image.BusyboxBase(*busybox, created); err != nil {
			return err
		}
	case *bin != "":
		var closeBase func()
		img, closeBase, err = image.Build(image.Options{BinDir: *bin, Base: *base, Version: *version, Created: created})
		if err != nil {
			return err
		}
		defer closeBase()
	default:
		return fmt.Errorf("give -bin DIR (toold's image) or -busybox PATH (a base)")
	}
	if err := image.WriteFile(*out, img, *name, created); err != nil {
		return err
	}
	d, _ := img.Digest()
	fmt.Fprintf(os.Stderr, "wrote %s: %s (%s)\n", *out, *name, d)
	return nil
}
