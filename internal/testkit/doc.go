// Package testkit holds what tests across mcpwarden's packages repeat: a
// stand-in upstream MCP server, a connected in-process client and a
// tools/call helper, a poll-until-true Eventually, a goroutine-safe buffer
// and a free loopback address.
//
// It is imported only by tests. It imports no mcpwarden package, so the
// tests of every package (proxy, upstream, cmd, internal/…) can use it
// without a cycle; anything that needs proxy or upstream types stays in
// that package's own tests.
package testkit
