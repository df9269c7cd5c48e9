// Package testkit holds what tests across mcpwarden's packages repeat: a
// stand-in upstream MCP server (StandIn), an initialised client (Connect,
// Initialize), a tools/call helper (CallTool, Text), a poll-until-true
// wait (Eventually), a goroutine-safe buffer (LockedBuffer), a free
// loopback address (FreeAddr), a loopback listener and a peer scripted
// per connection (Loopback, ServeConns), a metrics scrape (Scrape), a redis-server
// of the test's own (StartRedis) and the README's set-up commands
// (ReadmeSetupCommands, for the docs test and the fresh-clone test).
//
// It is imported only by tests. It imports no mcpwarden package, so the
// tests of every package (proxy, upstream, cmd, internal/…) can use it
// without a cycle; anything that needs proxy or upstream types stays in
// that package's own tests.
package testkit
