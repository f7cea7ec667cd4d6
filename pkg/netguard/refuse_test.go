package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/netguard"
)

// Guard.Refuse wins over every allowance: a live listener the guard would
// otherwise let through (by AllowAddrs and by a host rule) is not dialed.
func TestGuardRefuseWinsOverAllowances(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ap := netip.MustParseAddrPort(l.Addr().String())
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	g := &netguard.Guard{
		AllowAddrs:   []netip.AddrPort{ap},
		AllowPrivate: func(string) bool { return true },
		Refuse:       func(a netip.AddrPort) bool { return a.Port() == ap.Port() },
	}
	_, err = g.DialContext(context.Background(), "tcp", l.Addr().String())
	var be *netguard.BlockedError
	if !errors.As(err, &be) || be.Class != netguard.Toold || !strings.Contains(err.Error(), "toold's own listener") {
		t.Fatalf("dial: %v, want a refusal naming toold's own listener", err)
	}
	select {
	case <-accepted:
		t.Fatal("the listener accepted a connection")
	default:
	}
	// Without Refuse the same dial goes through (the test can fail).
	g.Refuse = nil
	c, err := g.DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
