// Package e2e holds the end-to-end tests: the real mcpwarden binary between
// real MCP clients (mcp-go's, the MCP Inspector CLI) and the real reference
// servers from npm, pinned in .ci/tools and installed by .ci/setup.
package e2e
