package terminal

import (
	"os"
	"testing"
)

// pipeHolds tells a pipe with bytes waiting from an empty one: the readers'
// stop keeps reading while a reader between two deliveries still has the
// command's output in the pipe.
func TestPipeHolds(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if pipeHolds(r) {
		t.Fatal("an empty pipe holds bytes")
	}
	if _, err := w.Write([]byte("left in the pipe")); err != nil {
		t.Fatal(err)
	}
	if !pipeHolds(r) {
		t.Fatal("a pipe with 16 bytes waiting holds none")
	}
	buf := make([]byte, 64)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	if pipeHolds(r) {
		t.Fatal("a drained pipe holds bytes")
	}
	w.Close()
	if pipeHolds(r) {
		t.Fatal("a pipe whose writer closed holds bytes")
	}
}
