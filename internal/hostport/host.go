package hostport

import (
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// lookupProfile is the IDNA mapping a resolver applies to a name before
// looking it up. It is immutable, built once, and safe for concurrent use.
var lookupProfile = idna.New(idna.MapForLookup(), idna.StrictDomainName(false), idna.Transitional(false))

// NormalizeHost returns a URL's host (IPv6 without brackets) as a client
// that connects to it would read it: lower case, no trailing dot, IDNA to
// ASCII, every IPv4 spelling (decimal `2852039166`, octal, hex, short
// `169.254.43518`, IPv4-mapped IPv6) as a dotted quad, IPv6 in its
// canonical form without a zone. ok is false for an empty host, a bad
// IPv6 address or a name IDNA refuses. It is the one normaliser that the
// rules (for `url.host`) and the egress proxy (for the host it decides and
// dials) share, so that a rule meets every spelling the proxy would dial.
func NormalizeHost(h string) (host string, ok bool) {
	if strings.Contains(h, ":") { // IPv6, brackets already removed
		a, err := netip.ParseAddr(h)
		if err != nil {
			return "", false
		}
		if a.Is4In6() {
			return a.Unmap().String(), true
		}
		return a.WithZone("").String(), true
	}
	h = strings.TrimRight(strings.ToLower(h), ".")
	if h == "" {
		return "", false
	}
	a, err := lookupProfile.ToASCII(h)
	if err != nil {
		return "", false
	}
	a = strings.TrimRight(strings.ToLower(a), ".")
	if a == "" { // nothing but characters IDNA maps away (U+FE01, U+00AD)
		return "", false
	}
	// What is decided must be a host name as DNS and the normaliser read
	// it again (a fixed point): letters, digits, '-', '_' and dots. A
	// control character or a label IDNA takes once but not twice is no
	// host.
	for i := 0; i < len(a); i++ {
		if c := a[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", false
		}
	}
	if again, err := lookupProfile.ToASCII(a); err != nil || strings.TrimRight(strings.ToLower(again), ".") != a {
		return "", false
	}
	if ip, ok := ParseIPv4(a); ok {
		return ip.String(), true
	}
	return a, true
}

// ParseIPv4 reads every spelling of an IPv4 address that inet_aton (and so
// curl, Python's socket and many resolvers) accepts: one to four parts,
// each decimal, octal with a leading 0 or hex with 0x, the last part
// filling the remaining bytes.
func ParseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals [4]uint64
	for i, part := range parts {
		n, ok := ipv4Part(part)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = n
	}
	last := len(parts) - 1
	for i := range last {
		if vals[i] > 255 {
			return netip.Addr{}, false
		}
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	var ip uint64
	for i := range last {
		ip |= vals[i] << (8 * (3 - i))
	}
	ip |= vals[last]
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

// ipv4Part reads one part of an inet_aton address.
func ipv4Part(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 32)
	return n, err == nil
}
