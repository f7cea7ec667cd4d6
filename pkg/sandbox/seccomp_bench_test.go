package sandbox

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkSeccompSyscall measures what the sandbox's seccomp filter adds
// to a system call the filter allows (the cost every call of a command
// pays), against the same call on a thread without the filter; and what
// installing it costs.
func BenchmarkSeccompSyscall(b *testing.B) {
	for _, filtered := range []bool{false, true} {
		name := "unfiltered"
		if filtered {
			name = "filtered"
		}
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
					if err := installSeccomp(nil); err != nil {
						done <- err
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
					err = installSeccomp(nil)
				}
				done <- err
			}()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	})
}
