// Package connect is the vocabulary of a connection as the rules decide
// it, mcp:<server>:network/connect: its arguments (host and port), how
// check's hand-written ones are read, and whether a rule names a special
// address literally, which the egress proxy requires to dial it.
package connect

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/egress"
	"github.com/mcpwarden/mcpwarden/internal/hostport"
	"github.com/mcpwarden/mcpwarden/rules"
)

// NamesAddress reports whether p lets server's egress proxy dial addr, a
// special address, on port: an
// allow rule of the global or the server's policy for
// mcp:<server>:network/connect names addr itself with a literal `host=`
// pattern (`host=169.254.169.254`, `host=127.0.0.1:port=8080`), and the
// connection to addr is allowed. `host=*`, `host=10.*` and rules without
// a host name no address: a wildcard that opens the internet does not
// open the machine or its cloud's metadata service. Nor does a rule
// naming the host: `host=registry.example` allows that name wherever it
// points, and whoever controls its DNS could point it at 127.0.0.1 or
// 169.254.169.254; reaching an internal address by name takes a rule for
// the name and one for each address.
func NamesAddress(p *rules.Policy, server string, addr netip.Addr, port uint16) bool {
	rc := rules.Call{Server: server, Tool: rules.ToolConnect, Arguments: ArgsOf(addr.Unmap().WithZone("").String(), port)}
	return p.NamesExactly(rc, "host") && p.Decide(rc).Decision == rules.Allow
}

// Args returns the arguments of a network/connect request written
// by hand (to check) as the proxy decides them: the host normalised as a
// URL host (hostport.NormalizeHost), the port a number from 1 to 65535 (a
// string of digits, as check's --arg gives, is read as one), and nothing
// else. Its error says what to write instead.
func Args(args map[string]any) (map[string]any, error) {
	const want = `want {"host": "api.github.com", "port": 443}`
	for k := range args {
		if k != "host" && k != "port" {
			return nil, fmt.Errorf("%s takes host and port only, not %q; %s", rules.ToolConnect, k, want)
		}
	}
	raw, _ := args["host"].(string)
	host, ok := hostport.NormalizeHost(strings.Trim(raw, "[]"))
	if !ok {
		return nil, fmt.Errorf("%s: host %q is not a host name or address; %s", rules.ToolConnect, raw, want)
	}
	var text, shown string
	switch v := args["port"].(type) {
	case json.Number:
		text, shown = v.String(), v.String()
	case string:
		text, shown = v, strconv.Quote(v)
	case nil:
		shown = "(missing)"
	default:
		shown = fmt.Sprintf("%v", v)
	}
	port, err := strconv.ParseUint(text, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("%s: port %s is not a number from 1 to 65535; %s", rules.ToolConnect, shown, want)
	}
	return ArgsOf(host, uint16(port)), nil
}

// AddressRefusal says why server's egress proxy would refuse a connection
// with args (as Args returns them) whatever the rules decide: its
// host is a special address (egress.Classify) that no rule names
// (NamesAddress). It is "" for a public address, an address a rule names,
// and a name, whose addresses only the lookup the proxy makes tells.
func AddressRefusal(p *rules.Policy, server string, args map[string]any) string {
	host, _ := args["host"].(string)
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return ""
	}
	port, _ := strconv.ParseUint(fmt.Sprint(args["port"]), 10, 16)
	class := egress.Classify(addr)
	if class == egress.ClassPublic || NamesAddress(p, server, addr, uint16(port)) {
		return ""
	}
	return fmt.Sprintf("%s is a %s address, which the egress proxy dials only when an allow rule names it literally: %s",
		host, class, rules.Canonical(server, rules.ToolConnect)+":host="+host+":port="+strconv.FormatUint(port, 10))
}

// Gate is the gate a verdict names when the egress proxy refuses a
// connection's address on its own (Refuse). It is one of mcpwarden's own
// refusals: shadow mode never lifts it.
const Gate = "egress proxy"

// Refuse returns v, the rules' verdict on a connection of server with
// args, or the egress proxy's own refusal of its address (AddressRefusal)
// when it has one and v does not already deny: a connection the proxy
// would refuse at the dial is refused when it is decided, so no one is
// asked about it and shadow mode does not record it as let through.
func Refuse(p *rules.Policy, server string, args map[string]any, v rules.Verdict) rules.Verdict {
	if v.Decision == rules.Deny {
		return v
	}
	if why := AddressRefusal(p, server, args); why != "" {
		return rules.Verdict{Decision: rules.Deny, Gate: Gate, Reason: why}
	}
	return v
}

// ArgsOf are a connection's arguments as the rules, the human and
// the audit log see them.
func ArgsOf(host string, port uint16) map[string]any {
	return map[string]any{"host": host, "port": json.Number(strconv.FormatUint(uint64(port), 10))}
}

// Endpoint is the host:port of a connection's arguments, "" when they
// are not a host and a port.
func Endpoint(args map[string]any) string {
	host, _ := args["host"].(string)
	port, ok := args["port"].(json.Number)
	if host == "" || !ok {
		return ""
	}
	return net.JoinHostPort(host, port.String())
}
