package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// An AddrClass is what kind of address an IP address is, as far as
// egress cares. Every class but Public is refused unless a rule names the
// address. The zero value, ClassInvalid, is refused too.
type AddrClass uint8

// The address classes.
const (
	ClassInvalid     AddrClass = iota // not an address
	ClassUnspecified                  // 0.0.0.0/8, ::
	ClassLoopback                     // 127.0.0.0/8, ::1
	ClassPrivate                      // RFC 1918, RFC 4193 ULA, local-use NAT64
	ClassLinkLocal                    // 169.254.0.0/16, fe80::/10
	ClassShared                       // CGNAT 100.64.0.0/10
	ClassMulticast                    // 224.0.0.0/4, ff00::/8
	ClassBroadcast                    // 255.255.255.255
	ClassMetadata                     // a cloud provider's instance metadata or platform address
	ClassReserved                     // documentation, benchmarking, IETF, Teredo, site-local, 240.0.0.0/4, …
	ClassPublic                       // everything else
)

var classNames = enumtext.Names[AddrClass]{
	ClassInvalid: "invalid", ClassUnspecified: "unspecified", ClassLoopback: "loopback",
	ClassPrivate: "private", ClassLinkLocal: "link-local", ClassShared: "shared (CGNAT)",
	ClassMulticast: "multicast", ClassBroadcast: "broadcast", ClassMetadata: "cloud metadata",
	ClassReserved: "reserved", ClassPublic: "public",
}

// String returns the class's name, e.g. "loopback".
func (c AddrClass) String() string { return classNames.String(c, "AddrClass") }

// MarshalText returns c's name, or an error for a value that has none.
func (c AddrClass) MarshalText() ([]byte, error) { return classNames.Marshal(c, "address class") }

// A classPrefix is one special range; the first that holds an address
// classifies it, so exact metadata addresses come before their ranges.
type classPrefix struct {
	prefix netip.Prefix
	class  AddrClass
}

// specialPrefixes are the ranges Classify refuses, in the order it tries
// them. Immutable after package initialisation.
var specialPrefixes = func() []classPrefix {
	table := []struct {
		prefix string
		class  AddrClass
	}{
		{"169.254.169.254/32", ClassMetadata}, // AWS, GCP, Azure, Oracle, OpenStack, DigitalOcean
		{"169.254.170.2/32", ClassMetadata},   // AWS ECS task metadata
		{"169.254.170.23/32", ClassMetadata},  // AWS EKS pod identity
		{"100.100.100.200/32", ClassMetadata}, // Alibaba Cloud
		{"192.0.0.192/32", ClassMetadata},     // Oracle Cloud
		{"168.63.129.16/32", ClassMetadata},   // Azure platform (WireServer), a public address
		{"fd00:ec2::254/128", ClassMetadata},  // AWS over IPv6
		{"fd00:ec2::23/128", ClassMetadata},   // AWS EKS pod identity over IPv6
		{"0.0.0.0/8", ClassUnspecified},
		{"10.0.0.0/8", ClassPrivate},
		{"100.64.0.0/10", ClassShared},
		{"127.0.0.0/8", ClassLoopback},
		{"169.254.0.0/16", ClassLinkLocal},
		{"172.16.0.0/12", ClassPrivate},
		{"192.0.0.0/24", ClassReserved},
		{"192.0.2.0/24", ClassReserved},
		{"192.88.99.0/24", ClassReserved},
		{"192.168.0.0/16", ClassPrivate},
		{"198.18.0.0/15", ClassReserved},
		{"198.51.100.0/24", ClassReserved},
		{"203.0.113.0/24", ClassReserved},
		{"224.0.0.0/4", ClassMulticast},
		{"255.255.255.255/32", ClassBroadcast},
		{"240.0.0.0/4", ClassReserved},
		{"::/128", ClassUnspecified},
		{"::1/128", ClassLoopback},
		{"::/96", ClassReserved}, // IPv4-compatible, deprecated
		{"64:ff9b:1::/48", ClassPrivate},
		{"100::/64", ClassReserved},
		{"2001::/23", ClassReserved}, // IETF protocol assignments, Teredo included
		{"2001:db8::/32", ClassReserved},
		{"3fff::/20", ClassReserved},
		{"fc00::/7", ClassPrivate},
		{"fe80::/10", ClassLinkLocal},
		{"fec0::/10", ClassReserved},
		{"ff00::/8", ClassMulticast},
	}
	out := make([]classPrefix, len(table))
	for i, e := range table {
		out[i] = classPrefix{netip.MustParsePrefix(e.prefix), e.class}
	}
	return out
}()

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// Classify returns a's class. An IPv4-mapped IPv6 address is classified
// as its IPv4 address, and so is the IPv4 address inside a NAT64
// (64:ff9b::/96) or 6to4 (2002::/16) address, since a gateway turns those
// into connections to it. A zone is ignored.
func Classify(a netip.Addr) AddrClass {
	if !a.IsValid() {
		return ClassInvalid
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64Prefix.Contains(a):
			if c := Classify(netip.AddrFrom4([4]byte(b[12:16]))); c != ClassPublic {
				return c
			}
			return ClassPublic
		case sixToFour.Contains(a):
			if c := Classify(netip.AddrFrom4([4]byte(b[2:6]))); c != ClassPublic {
				return c
			}
			return ClassPublic
		}
	}
	for _, s := range specialPrefixes {
		if s.prefix.Contains(a) {
			return s.class
		}
	}
	return ClassPublic
}

// An AddressError is a refused address: the host resolved to (or was) an
// address of a special class that no rule names.
type AddressError struct {
	Host  string
	Addr  netip.Addr
	Class AddrClass
}

func (e *AddressError) Error() string {
	if e.Addr.String() == e.Host {
		return fmt.Sprintf("%s is a %s address; to reach it, name it in a rule (host %q)", e.Host, e.Class, e.Host)
	}
	return fmt.Sprintf("%s resolves to %s, a %s address; to reach it, name the address in a rule (host %q)", e.Host, e.Addr, e.Class, e.Addr)
}

// errNoAddress is a lookup that returned nothing.
var errNoAddress = errors.New("no addresses")

// maxAddrs bounds the addresses of one name the proxy checks and tries.
const maxAddrs = 16

// resolve returns the addresses the proxy may dial for r: r.Host itself
// when it is an address, else the resolver's answer for it looked up as a
// rooted name (so that no search domain turns it into another). Every
// address must be public or named by a rule; one that is neither refuses
// the whole name, with an *AddressError, rather than being dropped: a name
// that mixes public and internal addresses is how a rebinding attack is
// set up, and refusing it keeps what is dialled independent of which
// answer happens to come first.
func (p *Proxy) resolve(ctx context.Context, r Request) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(r.Host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
		defer cancel()
		addrs, err = p.opts.Resolver.LookupNetIP(lctx, "ip", r.Host+".")
		if err != nil {
			return nil, fmt.Errorf("looking up %q: %w", r.Host, err)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("looking up %q: %w", r.Host, errNoAddress)
	}
	out := make([]netip.Addr, 0, min(len(addrs), maxAddrs))
	for _, a := range addrs {
		a = a.Unmap()
		if c := Classify(a); c != ClassPublic && (p.opts.NamesAddress == nil || !p.opts.NamesAddress(r.Host, a, r.Port)) {
			return nil, &AddressError{Host: r.Host, Addr: a, Class: c}
		}
		if len(out) < maxAddrs && !containsAddr(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

func containsAddr(as []netip.Addr, a netip.Addr) bool {
	for _, b := range as {
		if a == b {
			return true
		}
	}
	return false
}

// dial connects to the first of addrs (all checked by resolve) that
// answers, by address only: nothing is looked up again.
func (p *Proxy) dial(ctx context.Context, addrs []netip.Addr, port uint16) (net.Conn, netip.AddrPort, error) {
	d := net.Dialer{Timeout: p.opts.DialTimeout, KeepAlive: 30 * time.Second}
	var errs []error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, port)
		c, err := d.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			return c, ap, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.AddrPort{}, fmt.Errorf("dialling: %w", errors.Join(errs...))
}
