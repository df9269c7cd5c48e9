package rules

import (
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
	"github.com/mcpwarden/mcpwarden/internal/keyfold"
)

// ToolConnect is the request kind of a sandboxed server's outbound
// connection, mcp:<server>:network/connect, whose arguments are the host
// (normalised as a URL host: hostport.NormalizeHost) and the port.
const ToolConnect = "network/connect"

// checkHostPattern returns why a glob on the host of a rule naming
// network/connect can never match, and the fix, or "": the proxy decides
// the host normalised (lower case, no trailing dot, IDNA to ASCII, an IPv4
// address as a dotted quad, IPv6 canonical), so `host=API.GitHub.com`,
// `host=0x7f.1` or `host=*.GitHub.com` would silently never match — a
// deny that never holds. A regexp is not checked.
func checkHostPattern(r *rule, cd *cond) string {
	if !r.tool.literal() || r.tool.lit != ToolConnect || cd.fact != factNone || cd.op == opRe || len(cd.segs) != 1 || !keyfold.Equal(cd.segs[0], "host") {
		return ""
	}
	const never = "the host of " + ToolConnect + " is decided normalised (lower case, no trailing dot, IDNA to ASCII, IPv4 as a dotted quad, IPv6 canonical), so this pattern never matches; "
	// `[::1]` would be a glob character class: IPv6 in brackets is meant.
	bracketed := strings.HasPrefix(cd.pattern, "[") && strings.HasSuffix(cd.pattern, "]") && strings.Contains(cd.pattern, ":")
	if bracketed || isLiteral(cd.pattern) {
		n, ok := hostport.NormalizeHost(strings.Trim(cd.pattern, "[]"))
		switch {
		case !ok:
			return never + "write a host name or address"
		case n != cd.pattern:
			return never + "write host=" + n
		}
		return ""
	}
	if l := strings.ToLower(cd.pattern); l != cd.pattern {
		return never + "write host=" + l
	}
	return ""
}
