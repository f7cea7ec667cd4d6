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

// hostRules is a func-field HostRules.
type hostRules struct {
	allows func(tool, op, host string) bool
}

func (r hostRules) HostRuleAllows(tool, op, host string) bool { return r.allows(tool, op, host) }

// AllowByRules opens a loopback listener to a host exactly when the rules
// name it for the tool's operation; metadata stays refused; nil rules open
// nothing.
func TestAllowByRules(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	type asked struct{ tool, op, host string }
	var got []asked
	rules := hostRules{allows: func(tool, op, host string) bool {
		got = append(got, asked{tool, op, host})
		return tool == "web_operations" && op == "web_fetch" && (host == "intranet.test" || host == "meta.test")
	}}
	res := resolver{"intranet.test": "127.0.0.1", "other.test": "127.0.0.1", "meta.test": "169.254.169.254"}
	g := &netguard.Guard{Resolver: res, AllowPrivate: netguard.AllowByRules(rules, "web_operations", "web_fetch")}

	c, err := g.DialContext(context.Background(), "tcp", net.JoinHostPort("Intranet.Test.", port))
	if err != nil {
		t.Fatalf("a host the rules name: %v", err)
	}
	c.Close()
	<-accepted
	// Asked before the dial and again on the address connected to.
	for _, a := range got {
		if a != (asked{"web_operations", "web_fetch", "intranet.test"}) {
			t.Fatalf("the rules were asked %v, want the tool, its operation and the normalized host", got)
		}
	}
	if len(got) == 0 {
		t.Fatal("the rules were never asked")
	}
	var be *netguard.BlockedError
	for _, host := range []string{"other.test", "127.0.0.1", "meta.test"} {
		if _, err := g.DialContext(context.Background(), "tcp", net.JoinHostPort(host, port)); !errors.As(err, &be) {
			t.Fatalf("%s: %v, want refused", host, err)
		}
	}
	if be.Class != netguard.Metadata {
		t.Fatalf("meta.test refused as %q, want metadata (never opened by a rule)", be.Class)
	}
	// Rules for another tool do not open the host to this one.
	other := &netguard.Guard{Resolver: res, AllowPrivate: netguard.AllowByRules(rules, "terminal_operations", "run_command")}
	if _, err := other.DialContext(context.Background(), "tcp", net.JoinHostPort("intranet.test", port)); !errors.As(err, &be) {
		t.Fatalf("another tool: %v, want refused", err)
	}
	if netguard.AllowByRules(nil, "web_operations", "web_fetch") != nil {
		t.Fatal("AllowByRules(nil) is not nil: a guard without rules would ask nobody")
	}
	if n := len(accepted); n != 0 {
		t.Fatalf("the listener accepted %d connections after the allowed one, want none", n)
	}
}

// resolver answers names from a table.
type resolver map[string]string

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
