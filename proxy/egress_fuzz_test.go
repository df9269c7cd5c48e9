package proxy

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
	"github.com/mcpwarden/mcpwarden/proxy/connect"
	"github.com/mcpwarden/mcpwarden/rules"
)

// FuzzConnectArgsDecideAsTheProxyDoes feeds check's network/connect
// arguments: reading them never panics, and what they read as is what the
// proxy would decide for that connection — a host the normaliser leaves
// as it is, a port from 1 to 65535 — so that check and the proxy agree.
func FuzzConnectArgsDecideAsTheProxyDoes(f *testing.F) {
	for _, seed := range [][2]string{
		{"api.github.com", "443"}, {"API.GitHub.com.", "443"}, {"0x7f.1", "80"}, {"[::1]", "8080"},
		{"169.254.169.254", "80"}, {"2130706433", "0"}, {"bücher.example", "65536"}, {"", "1"},
	} {
		f.Add(seed[0], seed[1])
	}
	p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:fs:network/connect:host=*", "mcp:fs:network/connect:host=127.0.0.1"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host, port string) {
		args, err := connect.Args(map[string]any{"host": host, "port": json.Number(port)})
		if err != nil {
			return
		}
		h, _ := args["host"].(string)
		if n, ok := hostport.NormalizeHost(h); !ok || n != h {
			t.Fatalf("host %q reads as %q, which the proxy would decide as %q (%v)", host, h, n, ok)
		}
		pn, _ := args["port"].(json.Number)
		if v, err := strconv.ParseUint(string(pn), 10, 16); err != nil || v == 0 || connect.ArgsOf(h, uint16(v))["port"] != pn {
			t.Fatalf("port %q reads as %q", port, pn)
		}
		_ = connect.AddressRefusal(p, "fs", args)
	})
}
