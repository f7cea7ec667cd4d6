//go:build !linux

package main

import (
	"errors"
	"os"
)

// cbreak is not supported here: terminal.key reads a line instead.
func cbreak(*os.File) (restore func(), err error) {
	return nil, errors.New("cbreak mode is supported on Linux only")
}
