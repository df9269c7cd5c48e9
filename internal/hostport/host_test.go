package hostport

import "testing"

func TestNormalizeHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"a name in mixed case with a trailing dot", "API.Example.COM.", "api.example.com", true},
		{"an internationalised name", "B\u00fccher.example", "xn--bcher-kva.example", true},
		{"a full-width name", "\uff45xample.com", "example.com", true},
		{"a decimal IPv4 address", "2130706433", "127.0.0.1", true},
		{"an octal IPv4 address", "0177.0.0.1", "127.0.0.1", true},
		{"a hex IPv4 address", "0x7f.1", "127.0.0.1", true},
		{"a short IPv4 address", "169.254.43518", "169.254.169.254", true},
		{"an IPv4-mapped IPv6 address", "::ffff:a9fe:a9fe", "169.254.169.254", true},
		{"an IPv6 address with a zone", "FE80::1%eth0", "fe80::1", true},
		{"a long IPv6 spelling", "0:0:0:0:0:0:0:1", "::1", true},
		{"an empty host", "", "", false},
		{"only dots", "..", "", false},
		// IDNA maps these away: the host would be decided as "", no host.
		{"only a variation selector", "\ufe01", "", false},
		{"only soft hyphens and a dot", "\u00ad\u00ad.", "", false},
		{"a control character", "ex\fample.com", "", false},
		{"a label IDNA takes once but not twice", "\u00fc0\f\f", "", false},
		{"a bad IPv6 address", "1::2::3", "", false},
		{"an IPv4 part out of range", "256.1.1.1", "256.1.1.1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := NormalizeHost(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("NormalizeHost(%q) = %q, %t; want %q, %t", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}
