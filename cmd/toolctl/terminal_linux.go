package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// cbreak switches the terminal f to reading single key presses without
// echo, keeping signals (Ctrl-C) on, and discards the input typed so far.
// The returned func restores the previous mode.
func cbreak(f *os.File) (restore func(), err error) {
	fd, err := fdOf(f)
	if err != nil {
		return nil, err
	}
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	t := *old
	t.Lflag &^= unix.ICANON | unix.ECHO
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETSF, &t); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
