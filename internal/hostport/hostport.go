// Package hostport parses the host names that mcpwarden's HTTP settings
// hold: allowed Host header values, allowed origins and listen addresses.
// It is the one parser that config validation and the HTTP listener's
// guard share, so that validate refuses exactly what serve would refuse,
// before any upstream has started. It also normalises a URL's host
// (NormalizeHost), the one normaliser of the rules and the egress proxy.
// It does no I/O.
package hostport

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// A Pattern is one allowed Host: a lower-case name (IPv6 without brackets,
// no trailing dot) and a port, "" for any.
type Pattern struct{ Name, Port string }

// ParsePattern parses an allowed host entry: "name", "name:port", "[v6]"
// or "[v6]:port". Wildcards, paths, user info and unbracketed IPv6
// addresses are errors.
func ParsePattern(h string) (Pattern, error) {
	if h == "" || strings.ContainsAny(h, "/ @?#*") {
		return Pattern{}, fmt.Errorf("allowed host %q: want a name or name:port", h)
	}
	name, port, err := Split(h)
	if err != nil {
		return Pattern{}, fmt.Errorf("allowed host %q: %w", h, err)
	}
	return Pattern{Name: name, Port: port}, nil
}

// Match reports whether a name and port, as Split returns them, are
// allowed by p.
func (p Pattern) Match(name, port string) bool {
	return p.Name == name && (p.Port == "" || p.Port == port)
}

// NormalizeOrigin checks that origin is scheme://host[:port] with an http
// or https scheme and a host Split accepts, and returns it in lower case.
func NormalizeOrigin(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("allowed origin %q: want scheme://host[:port] with scheme http or https", origin)
	}
	if _, _, err := Split(u.Host); err != nil {
		return "", fmt.Errorf("allowed origin %q: %w", origin, err)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// Split splits "name", "name:port", "[v6]" or "[v6]:port" into a
// lower-case name without brackets (and, for a name, without its trailing
// dot) and a port ("" if none).
// The port must be digits; an IPv6 address must be in brackets.
func Split(hostport string) (name, port string, err error) {
	hasPort := false
	switch {
	case strings.HasPrefix(hostport, "["):
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", "", fmt.Errorf("unclosed [ in %q", hostport)
		}
		name = hostport[1:end]
		if _, err := netip.ParseAddr(name); err != nil || !strings.Contains(name, ":") {
			return "", "", fmt.Errorf("bad IPv6 address in %q", hostport)
		}
		if rest := hostport[end+1:]; rest != "" {
			if port, hasPort = strings.CutPrefix(rest, ":"); !hasPort {
				return "", "", fmt.Errorf("junk after ] in %q", hostport)
			}
		}
	case strings.Count(hostport, ":") > 1:
		return "", "", fmt.Errorf("IPv6 address %q needs brackets", hostport)
	default:
		name, port, hasPort = strings.Cut(hostport, ":")
	}
	if hasPort && (port == "" || strings.Trim(port, "0123456789") != "") {
		return "", "", fmt.Errorf("bad port in %q", hostport)
	}
	if !strings.HasPrefix(hostport, "[") {
		// A name's trailing dot (the root) is dropped; an IPv6 address's
		// is not, as its zone may end in one ("[fe80::1%eth0.]").
		name = strings.TrimSuffix(name, ".")
	}
	name = strings.ToLower(name)
	if name == "" {
		return "", "", fmt.Errorf("empty host in %q", hostport)
	}
	return name, port, nil
}

// IsLocalhostName reports whether name (as Split returns it) is one of the
// localhost names: localhost, 127.0.0.1 or ::1. Other loopback addresses
// are allowed as Host only when listed, so the default list stays small
// and obvious.
func IsLocalhostName(name string) bool {
	if name == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && (ip == netip.MustParseAddr("127.0.0.1") || ip == netip.IPv6Loopback())
}

// IsLoopback reports whether host, the host of a listen address or URL
// without brackets, is "localhost" (in any case) or a loopback IP address
// (all of 127.0.0.0/8, ::1). A listener there is reachable from this
// machine only.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ListenHost returns the allowed host entry that a listener on host (the
// host of a listen address, IPv6 without brackets) adds to the allowlist,
// so that clients may use the address they connect to: host itself, IPv6
// in brackets. An unspecified address (0.0.0.0, ::, "") adds none, and ok
// is false: it names no host a client would send.
func ListenHost(host string) (entry string, ok bool) {
	ip, err := netip.ParseAddr(host)
	switch {
	case host == "" || err == nil && ip.IsUnspecified():
		return "", false
	case err == nil && ip.Is6():
		return "[" + host + "]", true
	}
	return host, true
}
