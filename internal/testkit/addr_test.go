package testkit

import "testing"

func TestFreeAddrNeverRepeatsAnAddress(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		addr := FreeAddr(t)
		if seen[addr] {
			t.Fatalf("FreeAddr returned %s twice", addr)
		}
		seen[addr] = true
	}
}
