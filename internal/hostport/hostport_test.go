package hostport

import (
	"net"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, host, port string
		ok                   bool
	}{
		{"a name", "Example.COM", "example.com", "", true},
		{"a name and port", "example.com:8080", "example.com", "8080", true},
		{"a trailing dot", "example.com.:80", "example.com", "80", true},
		{"a bracketed IPv6 address", "[FE80::1]", "fe80::1", "", true},
		{"a bracketed IPv6 address and port", "[::1]:3000", "::1", "3000", true},
		{"a zone ending in a dot, which is the zone's", "[::0%.]", "::0%.", "", true},
		{"an IPv4 address", "127.0.0.1:1", "127.0.0.1", "1", true},
		{"an unbracketed IPv6 address", "fe80::1", "", "", false},
		{"an unclosed bracket", "[::1", "", "", false},
		{"an IPv4 address in brackets", "[127.0.0.1]", "", "", false},
		{"a name in brackets", "[localhost]", "", "", false},
		{"junk after the bracket", "[::1]80", "", "", false},
		{"a named port", "example.com:http", "", "", false},
		{"an empty port", "example.com:", "", "", false},
		{"a signed port", "example.com:+80", "", "", false},
		{"no host", ":80", "", "", false},
		{"only a dot", ".", "", "", false},
		{"nothing", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			host, port, err := Split(tt.in)
			if (err == nil) != tt.ok || host != tt.host || port != tt.port {
				t.Errorf("Split(%q) = %q, %q, %v; want %q, %q, ok %v", tt.in, host, port, err, tt.host, tt.port, tt.ok)
			}
		})
	}
}

func TestPatternsRefuseWhatHostsCannotBe(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"", "*.example.com", "example.com/mcp", "user@example.com", "a b", "example.com?x", "fd00::1"} {
		if _, err := ParsePattern(h); err == nil {
			t.Errorf("ParsePattern(%q) accepted it", h)
		}
	}
	p, err := ParsePattern("MCP.example.com:8443")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Match("mcp.example.com", "8443") || p.Match("mcp.example.com", "80") || p.Match("example.com", "8443") {
		t.Errorf("pattern %+v matches wrongly", p)
	}
	if any, _ := ParsePattern("mcp.example.com"); !any.Match("mcp.example.com", "1") || !any.Match("mcp.example.com", "") {
		t.Errorf("pattern %+v without a port does not match every port", any)
	}
}

func TestNormalizeOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"https://App.Example.com", "https://app.example.com", true},
		{"http://[fd00::1]:3000/", "http://[fd00::1]:3000", true},
		{"app.example.com", "", false},
		{"ftp://app.example.com", "", false},
		{"https://app.example.com/x", "", false},
		{"https://u@app.example.com", "", false},
		{"https://app.example.com?q", "", false},
		{"https:app.example.com", "", false},
		{"https://app.example.com:https", "", false},
		{"null", "", false},
	}
	for _, tt := range tests {
		got, err := NormalizeOrigin(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestLocalhostNamesAndLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host                string
		localhost, loopback bool
	}{
		{"localhost", true, true},
		{"LOCALHOST", false, true}, // Split lower-cases names first
		{"127.0.0.1", true, true},
		{"::1", true, true},
		{"127.0.0.2", false, true},
		{"0.0.0.0", false, false},
		{"fe80::1", false, false},
		{"example.com", false, false},
	}
	for _, tt := range tests {
		if got := IsLocalhostName(tt.host); got != tt.localhost {
			t.Errorf("IsLocalhostName(%q) = %v, want %v", tt.host, got, tt.localhost)
		}
		if got := IsLoopback(tt.host); got != tt.loopback {
			t.Errorf("IsLoopback(%q) = %v, want %v", tt.host, got, tt.loopback)
		}
	}
}

// FuzzSplit checks that what Split accepts is a host net.JoinHostPort
// and Split again give back unchanged (but for a host still ending in a
// dot: Split trims one from a name, as a fully qualified name has one,
// and none from an IPv6 address's zone).
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"example.com:80", "[::1]:3000", "fe80::1", "[::1", "a.:1", ":80", "[::0%0]", "[fe80::1%eth0]:8080"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, port, err := Split(s)
		if err != nil {
			return
		}
		if host == "" {
			t.Fatalf("Split(%q) accepted an empty host", s)
		}
		if strings.HasSuffix(host, ".") {
			return
		}
		again := host
		if port != "" {
			again = net.JoinHostPort(host, port)
		} else if strings.Contains(host, ":") {
			// An IPv6 address, zoned or not (net.ParseIP refuses zones,
			// so it cannot tell): Split took it from brackets.
			again = "[" + host + "]"
		}
		h2, p2, err := Split(again)
		if err != nil || h2 != host || p2 != port {
			t.Fatalf("Split(%q) = %q, %q but Split(%q) = %q, %q, %v", s, host, port, again, h2, p2, err)
		}
	})
}

func TestListenHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host, entry string
		ok          bool
	}{
		{"", "", false},
		{"0.0.0.0", "", false},
		{"::", "", false},
		{"127.0.0.1", "127.0.0.1", true},
		{"::1", "[::1]", true},
		{"fe80::1%eth0", "[fe80::1%eth0]", true},
		{"mcp.example.com", "mcp.example.com", true},
	}
	for _, tt := range tests {
		entry, ok := ListenHost(tt.host)
		if entry != tt.entry || ok != tt.ok {
			t.Errorf("ListenHost(%q) = %q, %v; want %q, %v", tt.host, entry, ok, tt.entry, tt.ok)
		}
		if ok {
			if _, err := ParsePattern(entry); err != nil {
				t.Errorf("ParsePattern(%q) of a listen host: %v", entry, err)
			}
		}
	}
}
