//go:build !(linux || darwin)

package h1

import "net"

// canPeek says that open cannot tell a closed connection from an open
// one without a read that waits: every request goes to Fallback.
const canPeek = false

func open(net.Conn) bool { return false }
