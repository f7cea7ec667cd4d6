package authz

import (
	"github.com/toold/toold/pkg/authz/internal/shellread"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Hosts are judged by their canonical form: the metadata address
// 169.254.169.254 is also 2852039166, 0xa9fea9fe, 0251.0376.0251.0376,
// 169.254.43518, [::ffff:169.254.169.254], [::ffff:a9fe:a9fe] and
// [64:ff9b::a9fe:a9fe], and inet_aton, curl and the kernel accept them all.

// canonicalIP returns the canonical form of an IP address written in any of
// the forms inet_aton accepts (decimal, octal, hex, 1 to 4 parts) or as an
// IPv6 address that embeds an IPv4 one (mapped, compatible, NAT64), and
// whether s is one.
func canonicalIP(s string) (string, bool) {
	s = strings.TrimSuffix(strings.Trim(s, "[]"), ".")
	if s == "" {
		return "", false
	}
	if a, err := netip.ParseAddr(strings.Split(s, "%")[0]); err == nil {
		if a.Is4In6() {
			return a.Unmap().String(), true
		}
		if a.Is6() {
			b := a.As16()
			// IPv4-compatible (::a.b.c.d) and the NAT64 prefix 64:ff9b::/96.
			if (isZero(b[:12]) && !isZero(b[12:]) && a.String() != "::1") || (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && isZero(b[4:12])) {
				return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}).String(), true
			}
		}
		return a.String(), true
	}
	return inetAton(s)
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// inetAton parses the IPv4 forms of inet_aton(3): a, a.b, a.b.c, a.b.c.d,
// each part decimal, octal (0 prefix) or hex (0x prefix).
func inetAton(s string) (string, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return "", false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return "", false
		}
		base := 10
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" && base == 16 {
			return "", false
		}
		if p == "" {
			p = "0"
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return "", false
		}
		vals[i] = v
	}
	var ip uint64
	n := len(vals)
	for i := 0; i < n-1; i++ {
		if vals[i] > 255 {
			return "", false
		}
		ip |= vals[i] << (8 * (3 - i))
	}
	if vals[n-1] >= 1<<(8*(5-n)) {
		return "", false
	}
	ip |= vals[n-1]
	return net.IPv4(byte(ip>>24), byte(ip>>16), byte(ip>>8), byte(ip)).String(), true
}

// netClients are programs whose arguments name hosts they connect to, with
// or without a scheme (curl 169.254.169.254/latest, nc HOST PORT, ssh
// user@host).
var netClients = []string{
	"curl", "wget", "wget2", "nc", "ncat", "netcat", "socat", "telnet", "http", "https", "xh", "httpie", "aria2c",
	"ssh", "scp", "sftp", "ftp", "tftp", "lftp", "rsync", "openssl", "ping", "ping6", "nmap", "dig", "host",
	"nslookup", "grpcurl", "websocat", "wscat", "links", "lynx", "w3m", "fetch", "axel", "git", "gh",
}

// hostCandidates returns what in a literal argument of a network client
// may be a host: URL hosts, the part before the first /, after an @, and
// each :-separated part (curl --resolve host:port:addr, -x proxy).
func hostCandidates(t string) []string {
	var out []string
	if h, ok := urlHost(t); ok {
		out = append(out, h)
	}
	if i := strings.Index(t, "://"); i >= 0 {
		t = t[i+3:]
	}
	if i := strings.IndexByte(t, '/'); i >= 0 {
		t = t[:i]
	}
	if i := strings.LastIndexByte(t, '@'); i >= 0 {
		t = t[i+1:]
	}
	if strings.HasPrefix(t, "[") {
		if i := strings.IndexByte(t, ']'); i > 0 {
			out = append(out, t[1:i])
			t = t[i+1:]
		}
	}
	out = append(out, t)
	if strings.Count(t, ":") >= 2 {
		// An IPv6 address, or host:port:addr.
		out = append(out, strings.Split(t, ":")...)
	} else if h, _, ok := strings.Cut(t, ":"); ok {
		out = append(out, h)
	}
	return out
}

// netHosts adds host facets for what the arguments of a network client
// name: IP addresses in any form, and names with a dot or a known metadata
// name. A run-time argument of a network client asks in every mode: it may
// name a host that is denied in every mode.
func (j *judgement) netHosts(i int, c *shellread.Command) {
	if c.WrapperOnly || !slices.Contains(netClients, c.Name()) {
		return
	}
	for k, w := range c.Args()[1:] {
		if !w.Literal {
			c.AddProblem(shellread.Problem{Rule: ruleDynamicTarget, Reason: "it connects to a host named by " + w.Src + ", which is only known when it runs; a host that is denied in every mode cannot be ruled out", Hard: true})
			continue
		}
		if c.Name() == "git" && k == 0 {
			continue
		}
		for _, cand := range argCandidates(w.Text) {
			for _, h := range hostCandidates(cand) {
				if ip, ok := canonicalIP(h); ok {
					if n, err := strconv.ParseUint(h, 10, 64); err == nil && n < 1<<24 {
						continue // a port or a count, not an address
					}
					j.addHost(ip, i)
					continue
				}
				if strings.Contains(h, ".") || h == "metadata" || h == "localhost" {
					if looksLikeHostname(h) {
						j.addHost(h, i)
					}
				}
			}
		}
	}
	if c.DynArgs {
		c.AddProblem(shellread.Problem{Rule: ruleDynamicTarget, Reason: "it connects to hosts given when it runs (" + strings.Join(c.Wrappers, ", ") + "); a host that is denied in every mode cannot be ruled out", Hard: true})
	}
}

func looksLikeHostname(h string) bool {
	if h == "" || len(h) > 253 || strings.HasPrefix(h, ".") || strings.HasPrefix(h, "-") {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
