package testkit

import (
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/freeport"
)

// FreeAddr returns a loopback address, host and port, whose port was free
// just now and that it has not returned before in this process
// (freeport.Addr, which the bench shares), failing t when there is none.
// Tests that can listen themselves should pass a listener instead.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
