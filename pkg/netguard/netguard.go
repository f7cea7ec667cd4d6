// Package netguard keeps network calls made for a model away from the
// machine's own network: loopback, private and link-local ranges, CGNAT,
// multicast, reserved ranges and the cloud metadata endpoints.
//
// The check is made on the address actually connected to, after DNS
// resolution and inside the dialer (net.Dialer.Control), never on a URL
// string: a redirect to a private address, a name that resolves to one, or
// a name whose answer changes between two lookups (DNS rebinding) is caught
// at connect time. The web tools and the egress proxy for commands share
// one Guard.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/toold/toold/pkg/errdefs"
)

// Class is why an address is refused.
type Class string

// Classes of refused addresses.
const (
	Metadata    Class = "cloud metadata endpoint"
	Loopback    Class = "loopback"
	Private     Class = "private network"
	LinkLocal   Class = "link-local"
	CGNAT       Class = "carrier-grade NAT (100.64.0.0/10)"
	Multicast   Class = "multicast"
	Unspecified Class = "unspecified address"
	Reserved    Class = "reserved or documentation range"
	Embedded    Class = "IPv6 form embedding a refused IPv4 address"
	// Toold is one of toold's own listeners (Guard.Refuse): never
	// reachable through toold, whatever the rules allow.
	Toold Class = "toold's own listener"
)

// metadataAddrs are the cloud metadata endpoints. They stay refused even
// for a host that a policy rule allows onto private addresses.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, DigitalOcean...
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task credentials
	netip.MustParseAddr("169.254.170.23"),  // AWS EKS pod identity
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("fd00:ec2::23"),    // AWS EKS pod identity over IPv6
}

type prefixClass struct {
	p netip.Prefix
	c Class
}

var v4Ranges = []prefixClass{
	{netip.MustParsePrefix("0.0.0.0/8"), Unspecified},
	{netip.MustParsePrefix("10.0.0.0/8"), Private},
	{netip.MustParsePrefix("100.64.0.0/10"), CGNAT},
	{netip.MustParsePrefix("127.0.0.0/8"), Loopback},
	{netip.MustParsePrefix("169.254.0.0/16"), LinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), Private},
	{netip.MustParsePrefix("192.0.0.0/24"), Reserved},
	{netip.MustParsePrefix("192.0.2.0/24"), Reserved},
	{netip.MustParsePrefix("192.88.99.0/24"), Reserved},
	{netip.MustParsePrefix("192.168.0.0/16"), Private},
	{netip.MustParsePrefix("198.18.0.0/15"), Reserved},
	{netip.MustParsePrefix("198.51.100.0/24"), Reserved},
	{netip.MustParsePrefix("203.0.113.0/24"), Reserved},
	{netip.MustParsePrefix("224.0.0.0/4"), Multicast},
	{netip.MustParsePrefix("240.0.0.0/4"), Reserved}, // includes 255.255.255.255
}

var v6Ranges = []prefixClass{
	{netip.MustParsePrefix("::1/128"), Loopback},
	{netip.MustParsePrefix("::/128"), Unspecified},
	{netip.MustParsePrefix("::/96"), Embedded}, // IPv4-compatible (deprecated)
	{netip.MustParsePrefix("100::/64"), Reserved},
	{netip.MustParsePrefix("2001::/32"), Embedded}, // Teredo: an obfuscated IPv4 inside
	{netip.MustParsePrefix("2001:db8::/32"), Reserved},
	{netip.MustParsePrefix("64:ff9b:1::/48"), Private},
	{netip.MustParsePrefix("fc00::/7"), Private},
	{netip.MustParsePrefix("fe80::/10"), LinkLocal},
	{netip.MustParsePrefix("fec0::/10"), Private},
	{netip.MustParsePrefix("ff00::/8"), Multicast},
}

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// Classify returns why ip may not be reached from a model's call, or ""
// when it is a public address. IPv4-mapped (::ffff:a.b.c.d), NAT64 and 6to4
// forms are judged by the IPv4 address they carry.
func Classify(ip netip.Addr) Class {
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return Unspecified
	}
	for _, m := range metadataAddrs {
		if ip.Unmap() == m {
			return Metadata
		}
	}
	if ip.Is4In6() {
		if c := Classify(ip.Unmap()); c != "" {
			return c
		}
		return ""
	}
	if ip.Is4() {
		for _, r := range v4Ranges {
			if r.p.Contains(ip) {
				return r.c
			}
		}
		return ""
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		if c := Classify(netip.AddrFrom4([4]byte(b[12:16]))); c != "" {
			return Embedded
		}
		return ""
	}
	if sixTo4.Contains(ip) {
		b := ip.As16()
		if c := Classify(netip.AddrFrom4([4]byte(b[2:6]))); c != "" {
			return Embedded
		}
		return ""
	}
	for _, r := range v6Ranges {
		if r.p.Contains(ip) {
			return r.c
		}
	}
	return ""
}

// BlockedError says that a connection was refused and why. It is of class
// errdefs.ErrDenied.
type BlockedError struct {
	// Host is the name the caller asked for (may be an address).
	Host string
	// Addr is the address refused.
	Addr netip.Addr
	// Class says why.
	Class Class
}

func (e *BlockedError) Error() string {
	what := e.Addr.String()
	if e.Host != "" && e.Host != what {
		what = fmt.Sprintf("%s (%s)", e.Host, e.Addr)
	}
	msg := fmt.Sprintf("toold refused to connect to %s: the address is in a range tools may not reach (%s)", what, e.Class)
	if e.Class == Toold {
		return fmt.Sprintf("toold refused to connect to %s: it is toold's own listener, which tools and commands may never reach", what)
	}
	if e.Class != Metadata {
		msg += "; a policy rule allowing the host by name (hosts: [" + normalize(hostOr(e.Host, e.Addr.WithZone("").String())) + "]) lets it through"
	}
	return msg
}

func hostOr(h, d string) string {
	if h != "" {
		return h
	}
	return d
}

// Is makes a BlockedError match errdefs.ErrDenied.
func (e *BlockedError) Is(target error) bool { return target == errdefs.ErrDenied }

// Resolver looks host names up. *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard dials TCP connections for a model's calls and refuses the
// addresses Classify names. The zero Guard refuses every such address. A
// Guard is safe for concurrent use and must not be changed once in use.
type Guard struct {
	// AllowPrivate, when set, reports whether host (a lowercased name or
	// address as the caller gave it, without port) may reach private,
	// loopback and other refused addresses: a policy rule that names the
	// host explicitly. Metadata endpoints stay refused.
	AllowPrivate func(host string) bool
	// AllowAddrs lets exactly these address:port pairs through. Tests use
	// it for their loopback servers; nothing sets it by default.
	AllowAddrs []netip.AddrPort
	// Resolver looks names up; nil means net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds one connection attempt; zero means 10 s.
	Timeout time.Duration
	// Refuse, when set, reports addresses refused whatever AllowPrivate
	// and AllowAddrs say: toold's own listeners, so that neither a tool
	// nor a command (through the egress proxy) reaches toold through
	// toold, where toold would see itself as the client.
	Refuse func(ap netip.AddrPort) bool
}

// HostRules is the policy's answer to whether a rule names a host
// explicitly and allows it for a tool's operation (authz.Engine's
// HostRuleAllows): only such a rule opens private and loopback addresses to
// a host.
type HostRules interface {
	HostRuleAllows(tool, op, host string) bool
}

// AllowByRules returns a Guard.AllowPrivate that lets a host reach private
// addresses when rules name it for tool's op; nil when rules is nil (no
// host may).
func AllowByRules(rules HostRules, tool, op string) func(host string) bool {
	if rules == nil {
		return nil
	}
	return func(host string) bool { return rules.HostRuleAllows(tool, op, host) }
}

// Check returns a *BlockedError when host (as asked for) may not reach ap.
func (g *Guard) Check(host string, ap netip.AddrPort) error {
	if g.Refuse != nil && g.Refuse(ap) {
		return &BlockedError{Host: host, Addr: ap.Addr(), Class: Toold}
	}
	ip := ap.Addr().WithZone("").Unmap()
	c := Classify(ap.Addr())
	if c == "" {
		return nil
	}
	if c != Metadata {
		for _, a := range g.AllowAddrs {
			if a.Addr().Unmap() == ip && a.Port() == ap.Port() {
				return nil
			}
		}
		if g.AllowPrivate != nil && host != "" && g.AllowPrivate(normalize(host)) {
			return nil
		}
	}
	return &BlockedError{Host: host, Addr: ap.Addr(), Class: c}
}

func normalize(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// DialContext connects to address ("host:port") over tcp, tcp4 or tcp6. A
// name is resolved with the Guard's resolver, every address is checked, and
// the check is made again in the dialer's Control on the address the
// socket actually connects to. When every address is refused, the error is
// a *BlockedError.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, errdefs.New(errdefs.ErrDenied, "network %q is not allowed (only tcp)", network)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalidArgument, err, "bad address %q: %v", address, err)
	}
	pn, err := net.LookupPort(network, port)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalidArgument, err, "bad port in %q", address)
	}
	addrs, err := g.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var firstErr error
	for _, ip := range addrs {
		ap := netip.AddrPortFrom(ip, uint16(pn))
		if err := g.Check(host, ap); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		d := &net.Dialer{Timeout: timeout, Control: g.control(host)}
		c, err := d.DialContext(ctx, network, ap.String())
		if err == nil {
			return c, nil
		}
		var be *BlockedError
		if errors.As(err, &be) || firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// control checks, for the name host, the address a socket is about to
// connect to.
func (g *Guard) control(host string) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &BlockedError{Host: host, Class: Unspecified}
		}
		return g.Check(host, ap)
	}
}

// Control is a net.Dialer.Control for dialers built elsewhere: it refuses
// the addresses Classify names, whatever name they were reached by (no
// policy exceptions apply, since the name is unknown here).
func (g *Guard) Control(_, address string, _ syscall.RawConn) error {
	return g.control("")("tcp", address, nil)
}

// CheckName resolves host (a name or an address) and returns a
// *BlockedError when any of its addresses is refused. It is for requests
// that a proxy will connect on the caller's behalf, where the guard cannot
// see the address connected to: a name that resolves to a refused address
// is refused. (A proxy resolves again; a rebinding between the two lookups
// is the proxy's to catch, which is why toold's own egress proxy dials
// through a Guard.)
func (g *Guard) CheckName(ctx context.Context, host, port string) error {
	pn, err := net.LookupPort("tcp", port)
	if err != nil {
		return errdefs.Wrap(errdefs.ErrInvalidArgument, err, "bad port %q", port)
	}
	addrs, err := g.resolve(ctx, "tcp", host)
	if err != nil {
		return err
	}
	for _, ip := range addrs {
		if err := g.Check(host, netip.AddrPortFrom(ip, uint16(pn))); err != nil {
			return err
		}
	}
	return nil
}

// resolve returns the addresses of host, a name or an address literal.
func (g *Guard) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{ip}, nil
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	lookupNet := "ip"
	switch network {
	case "tcp4":
		lookupNet = "ip4"
	case "tcp6":
		lookupNet = "ip6"
	}
	addrs, err := r.LookupNetIP(ctx, lookupNet, host)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrFailed, err, "cannot resolve %s: %v", host, err)
	}
	if len(addrs) == 0 {
		return nil, errdefs.Failed("cannot resolve %s: no addresses", host)
	}
	return addrs, nil
}
