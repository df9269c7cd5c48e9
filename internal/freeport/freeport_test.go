package freeport

import "testing"

func TestAddrNeverRepeatsAnAddress(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("Addr returned %s twice", addr)
		}
		seen[addr] = true
	}
}
