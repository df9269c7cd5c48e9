package rules

import (
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
)

// metadataPolicy denies the cloud metadata address by host and by whole
// URL, and allows fetching from one API host.
func metadataPolicy(t *testing.T) *Policy {
	t.Helper()
	return mustCompile(t, global(PolicySpec{
		Deny: []string{
			"mcp:web:fetch:url.host=169.254.169.254",
			"mcp:web:get:url=*://169.254.169.254*",
		},
		Allow: []string{"mcp:web:fetch:url.host=api.example.com:url.scheme=https", "mcp:web:*"},
	}))
}

func TestDecimalIPDoesNotEscapeMetadataDeny(t *testing.T) {
	t.Parallel()
	p := metadataPolicy(t)
	cases := []securityCase{
		{name: "the dotted quad", args: map[string]any{"url": "http://169.254.169.254/latest/meta-data"}, want: Deny},
		{name: "a decimal address", args: map[string]any{"url": "https://2852039166/"}, want: Deny},
		{name: "a hex address", args: map[string]any{"url": "http://0xa9fea9fe/"}, want: Deny},
		{name: "hex parts", args: map[string]any{"url": "http://0xa9.0xfe.0xa9.0xfe/"}, want: Deny},
		{name: "octal parts", args: map[string]any{"url": "http://0251.0376.0251.0376/"}, want: Deny},
		{name: "a short form", args: map[string]any{"url": "http://169.254.43518/"}, want: Deny},
		{name: "a two-part form", args: map[string]any{"url": "http://169.16689662/"}, want: Deny},
		{name: "a trailing dot", args: map[string]any{"url": "http://169.254.169.254./"}, want: Deny},
		{name: "fullwidth digits mapped by IDNA", args: map[string]any{"url": "http://\uff11\uff16\uff19.254.169.254/"}, want: Deny},
		{name: "an ideographic full stop", args: map[string]any{"url": "http://169\u3002254.169.254/"}, want: Deny},
		{name: "a percent-encoded host", args: map[string]any{"url": "http://%31%36%39.254.169.254/"}, want: Deny},
		{name: "another address", args: map[string]any{"url": "http://169.254.169.253/"}, want: Allow},
	}
	runSecurity(t, p, "web", "fetch", cases)
	runSecurity(t, p, "web", "get", cases)
}

func TestMappedIPv6DoesNotEscapeMetadataDeny(t *testing.T) {
	t.Parallel()
	p := metadataPolicy(t)
	cases := []securityCase{
		{name: "an IPv4-mapped IPv6 address in hex", args: map[string]any{"url": "https://[::ffff:a9fe:a9fe]/"}, want: Deny},
		{name: "an IPv4-mapped IPv6 address dotted", args: map[string]any{"url": "https://[::ffff:169.254.169.254]/"}, want: Deny},
		{name: "a long-form mapped address", args: map[string]any{"url": "http://[0:0:0:0:0:ffff:a9fe:a9fe]:80/"}, want: Deny},
		{name: "another IPv6 address", args: map[string]any{"url": "http://[2001:db8::1]/"}, want: Allow},
	}
	runSecurity(t, p, "web", "fetch", cases)
	runSecurity(t, p, "web", "get", cases)
}

func TestUserinfoHostDoesNotEscapeMetadataDeny(t *testing.T) {
	t.Parallel()
	p := metadataPolicy(t)
	cases := []securityCase{
		{name: "a user before the host", args: map[string]any{"url": "https://user@169.254.169.254/"}, want: Deny},
		{name: "a user and password before the host", args: map[string]any{"url": "http://api.example.com:pw@169.254.169.254/"}, want: Deny},
		{name: "an upper-case scheme", args: map[string]any{"url": "HTTP://169.254.169.254/"}, want: Deny},
		{name: "a backslash before an allowed-looking host", args: map[string]any{"url": "http://169.254.169.254\\@api.example.com/"}, want: Deny},
		{name: "the allowed host as userinfo", args: map[string]any{"url": "https://api.example.com:443@169.254.169.254/"}, want: Deny},
	}
	runSecurity(t, p, "web", "fetch", cases)
	runSecurity(t, p, "web", "get", cases)
}

func TestURLPartsAllowOnlyWhatParses(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, global(PolicySpec{
		Deny:  []string{"mcp:web:fetch:url.port=22", "mcp:web:fetch:url.path=/admin/**"},
		Allow: []string{"mcp:web:fetch:url.host=api.example.com:url.scheme=https"},
	}))
	runSecurity(t, p, "web", "fetch", []securityCase{
		{name: "the allowed host", args: map[string]any{"url": "https://api.example.com/v1"}, want: Allow},
		{name: "the allowed host in upper case", args: map[string]any{"url": "https://API.Example.COM/v1"}, want: Allow},
		{name: "the allowed host with a user that names another host", args: map[string]any{"url": "https://api.example.com@evil.test/"}, want: Ask},
		{name: "a look-alike suffix", args: map[string]any{"url": "https://api.example.com.evil.test/"}, want: Ask},
		{name: "a value that is not a URL satisfies every deny on a part", args: map[string]any{"url": "api.example.com/v1"}, want: Deny},
		{name: "a denied port", args: map[string]any{"url": "https://api.example.com:22/"}, want: Deny},
		{name: "a dot-dot into a denied path", args: map[string]any{"url": "https://api.example.com/x/../admin/users"}, want: Deny},
		{name: "an array of URLs with one not allowed", args: map[string]any{"url": []any{"https://api.example.com/", "http://api.example.com/"}}, want: Ask},
	})
	q := mustCompile(t, global(PolicySpec{Allow: []string{"mcp:web:fetch:url.host=api.example.com"}}))
	runSecurity(t, q, "web", "fetch", []securityCase{
		{name: "a value without a scheme never satisfies an allow", args: map[string]any{"url": "api.example.com/v1"}, want: Ask},
		{name: "a value that does not parse never satisfies an allow", args: map[string]any{"url": "https://api.example.com:port/"}, want: Ask},
		{name: "a number never satisfies an allow", args: map[string]any{"url": 5}, want: Ask},
		{name: "a backslash a WHATWG parser reads as a slash", args: map[string]any{"url": "http://169.254.169.254\\@api.example.com/"}, want: Ask},
		{name: "a tab a WHATWG parser drops", args: map[string]any{"url": "http://169.254.169.254\t@api.example.com/"}, want: Ask},
		{name: "a scheme without slashes", args: map[string]any{"url": "http:api.example.com"}, want: Ask},
		{name: "a fragment hiding the allowed host", args: map[string]any{"url": "http://evil.test#@api.example.com/"}, want: Ask},
	})
}

// FuzzParseURL checks that a parsed URL's host is normalised: lower case,
// no trailing dot, and an IPv4 address in its one dotted-quad spelling.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"https://2852039166/", "http://[::ffff:a9fe:a9fe]/", "https://user@169.254.169.254./x?y", "http://0x7f.1/", "http://B\u00fccher.example/"} {
		f.Add(s)
	}
	p := mustCompile(f, Spec{})
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := p.parseURL(s)
		if !ok {
			return
		}
		if v.host != strings.ToLower(v.host) || strings.HasSuffix(v.host, ".") {
			t.Fatalf("parseURL(%q) host %q is not normalised", s, v.host)
		}
		if ip, ok := hostport.ParseIPv4(v.host); ok && ip.String() != v.host {
			t.Fatalf("parseURL(%q) host %q is another spelling of %q", s, v.host, ip)
		}
		again, ok := p.parseURL(v.String())
		if ok && again.host != v.host {
			t.Fatalf("re-assembled %q has host %q, not %q", v.String(), again.host, v.host)
		}
	})
}
