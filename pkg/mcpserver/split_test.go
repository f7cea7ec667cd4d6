package mcpserver_test

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/toold/toold/pkg/mcpserver"
)

// A connection that sends nothing holds up no one; HTTP/1 goes to the HTTP
// listener and the HTTP/2 preface to the other; closing the gRPC listener
// closes the shared one.
func TestSplit(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h2, h1 := mcpserver.Split(l)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "http/1") })}
	served := make(chan struct{})
	go func() { srv.Serve(h1); close(served) }()

	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + l.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "http/1" {
		t.Fatalf("HTTP/1 answer %q", b)
	}

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	preface := "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	c.Write([]byte(preface + "more"))
	got, err := h2.Accept()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(preface)+4)
	if _, err := io.ReadFull(got, buf); err != nil || string(buf) != preface+"more" {
		t.Fatalf("replayed %q %v", buf, err)
	}
	got.Close()

	h2.Close() // as grpc.Server.Stop does
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("the HTTP side did not stop when the shared listener closed")
	}
	srv.Close()
}
