package egress

import (
	"net/netip"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want AddrClass
	}{
		{"93.184.215.14", ClassPublic},
		{"2606:4700::6810:84e5", ClassPublic},
		{"127.0.0.1", ClassLoopback},
		{"127.255.255.254", ClassLoopback},
		{"::1", ClassLoopback},
		{"::ffff:127.0.0.1", ClassLoopback},
		{"0.0.0.0", ClassUnspecified},
		{"0.1.2.3", ClassUnspecified},
		{"::", ClassUnspecified},
		{"10.1.2.3", ClassPrivate},
		{"172.16.0.1", ClassPrivate},
		{"172.31.255.255", ClassPrivate},
		{"172.32.0.1", ClassPublic},
		{"192.168.1.1", ClassPrivate},
		{"fd12:3456::1", ClassPrivate},
		{"fc00::1", ClassPrivate},
		{"64:ff9b:1::1", ClassPrivate},
		{"100.64.0.1", ClassShared},
		{"100.127.255.255", ClassShared},
		{"169.254.1.1", ClassLinkLocal},
		{"fe80::1", ClassLinkLocal},
		{"fe80::1%eth0", ClassLinkLocal},
		{"224.0.0.1", ClassMulticast},
		{"ff02::1", ClassMulticast},
		{"255.255.255.255", ClassBroadcast},
		{"169.254.169.254", ClassMetadata},
		{"::ffff:169.254.169.254", ClassMetadata},
		{"fd00:ec2::254", ClassMetadata},
		{"100.100.100.200", ClassMetadata},
		{"192.0.0.192", ClassMetadata},
		{"168.63.129.16", ClassMetadata},
		{"169.254.170.2", ClassMetadata},
		{"64:ff9b::a9fe:a9fe", ClassMetadata},
		{"64:ff9b::7f00:1", ClassLoopback},
		{"64:ff9b::5db8:d70e", ClassPublic},
		{"2002:a9fe:a9fe::1", ClassMetadata},
		{"2002:0a00:0001::1", ClassPrivate},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", ClassReserved}, // Teredo
		{"::7f00:1", ClassReserved},                             // IPv4-compatible
		{"192.0.2.1", ClassReserved},
		{"198.18.0.1", ClassReserved},
		{"240.0.0.1", ClassReserved},
		{"2001:db8::1", ClassReserved},
		{"fec0::1", ClassReserved},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			if got := Classify(netip.MustParseAddr(tt.addr)); got != tt.want {
				t.Errorf("Classify(%s) = %s, want %s", tt.addr, got, tt.want)
			}
		})
	}
	if got := Classify(netip.Addr{}); got != ClassInvalid {
		t.Errorf("Classify of the zero Addr = %s, want invalid", got)
	}
}
