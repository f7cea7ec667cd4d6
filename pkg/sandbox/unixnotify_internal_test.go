package sandbox

import (
	"net"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkUnixNotifyDecision measures the supervisor's decision on a
// path without the notification's round trip: the path opened as the
// caller would, and the bound sockets of the namespace listed (sock_diag).
// The calling thread's namespace is the host's here: more sockets than a
// sandbox's.
func BenchmarkUnixNotifyDecision(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			fd, errno := openAsCaller(path, unix.Gettid())
			if errno != 0 {
				b.Fatal(errno)
			}
			unix.Close(fd)
		}
	})
	b.Run("sock_diag", func(b *testing.B) {
		for b.Loop() {
			if _, err := unixDiag(udiagShowVFS); err != nil {
				b.Fatal(err)
			}
		}
	})
}
