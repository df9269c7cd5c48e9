package e2e

import (
	"testing"
	"time"
)

// TestConformanceAuthScenariosPassThroughMcpwarden runs the official MCP
// conformance suite's client authorization scenarios (auth/*, of
// protocols 2025-03-26, 2025-11-25 and 2026-07-28) with
// .ci/conformance-auth: once with the Go SDK's reference client, once with
// mcpwarden as the client (login followed headlessly, a tool call through
// serve). It requires every scenario the reference client passes to pass
// through mcpwarden too, but those the script lists as pending: discovery
// (RFC 9728 at every location, RFC 8414 and OpenID metadata, 2025-03-26
// servers without resource metadata), dynamic registration and client ID
// metadata documents, the scope selection strategy and step-up, each
// token endpoint authentication method, the RFC 9207 issuer check and
// the authorization server binding. The table is logged.
func TestConformanceAuthScenariosPassThroughMcpwarden(t *testing.T) {
	t.Parallel()
	runConformanceScript(t, "conformance-auth", 8*time.Minute, "auth scenarios that the reference client passes fail through mcpwarden (see the table above)")
}
