package sandbox

import (
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkSeccompSyscall measures what the sandbox's seccomp filter adds
// to a system call the filter allows (the cost every call of a command
// pays), against the same call on a thread without the filter — with and
// without the unix-socket supervisor's entries (filtered-notify: a call
// that is not connect never reaches the supervisor); and what installing
// it costs.
func BenchmarkSeccompSyscall(b *testing.B) {
	for _, mode := range []string{"unfiltered", "filtered", "filtered-notify"} {
		filtered := mode != "unfiltered"
		name := mode
		b.Run(name, func(b *testing.B) {
			done := make(chan error)
			go func() {
				// The filter stays with this thread, which ends with the
				// goroutine (never unlocked).
				runtime.LockOSThread()
				if filtered {
					if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
						done <- err
						return
					}
					prog := seccompProgram(seccompArch(), mode == "filtered-notify", mode == "filtered-notify")
					fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
					if _, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
						done <- errno
						return
					}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					unix.Getppid()
				}
				b.StopTimer()
				done <- nil
			}()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("install", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			done := make(chan error)
			go func() {
				runtime.LockOSThread()
				err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
				if err == nil {
					_, err = installSeccomp(nil, false)
				}
				done <- err
			}()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	})
}
