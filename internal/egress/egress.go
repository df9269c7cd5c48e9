// Package egress carries a sandboxed server's outbound connections: an HTTP
// proxy (CONNECT tunnels and absolute-form HTTP) on a listener the wiring
// gives it, which normalises the host asked for, has a Decider decide each
// connection, resolves the name itself, refuses special addresses (loopback,
// private, link-local, metadata, …) unless the wiring says a rule names
// them, dials exactly an address it checked, checks the TLS server name on
// TLS ports, and reports every connection when it ends. It decides nothing
// itself beyond those checks, and it writes no audit: the wiring does both.
package egress

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// A Request is one connection a server asks the proxy for: the host as a
// URL host normalised by hostport.NormalizeHost (lower case, no trailing
// dot, IDNA to ASCII, an IPv4 address as a dotted quad, IPv6 canonical and
// without brackets) and the port, never 0.
type Request struct {
	Host string
	Port uint16
}

// A Decision is the outcome of deciding a Request. The zero value is
// Refuse, so a Verdict never filled in fails closed.
type Decision uint8

// The decisions.
const (
	Refuse Decision = iota
	Allow
)

var decisionNames = enumtext.Names[Decision]{Refuse: "refuse", Allow: "allow"}

// String returns "refuse" or "allow".
func (d Decision) String() string { return decisionNames.String(d, "Decision") }

// MarshalText returns d's name, or an error for a value that has none.
func (d Decision) MarshalText() ([]byte, error) { return decisionNames.Marshal(d, "decision") }

// A Verdict is a Decider's answer. Reason is shown to the client in the
// body of a 403 when the Decision is Refuse (say which rule, and what to
// write instead); the zero Verdict refuses.
type Verdict struct {
	Decision Decision
	Reason   string
}

// A Decider decides each connection before the proxy resolves or dials
// anything. Decide may block (a human being asked): the proxy holds the
// client meanwhile, and ctx ends when the proxy closes or the Serve
// context ends. It must be safe for concurrent use.
type Decider interface {
	Decide(ctx context.Context, r Request) Verdict
}

// A DeciderFunc is a function used as a Decider.
type DeciderFunc func(ctx context.Context, r Request) Verdict

// Decide calls f.
func (f DeciderFunc) Decide(ctx context.Context, r Request) Verdict { return f(ctx, r) }

var (
	_ Decider  = DeciderFunc(nil)
	_ Resolver = (*net.Resolver)(nil)
)

// A Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// A Kind is how a client asked for a connection.
type Kind uint8

// The kinds. KindUnknown is a request the proxy could not read.
const (
	KindUnknown Kind = iota
	KindTunnel       // CONNECT host:port
	KindForward      // an absolute-form HTTP request, GET http://host/…
)

var kindNames = enumtext.Names[Kind]{KindUnknown: "unknown", KindTunnel: "tunnel", KindForward: "forward"}

// String returns "unknown", "tunnel" or "forward".
func (k Kind) String() string { return kindNames.String(k, "Kind") }

// MarshalText returns k's name, or an error for a value that has none.
func (k Kind) MarshalText() ([]byte, error) { return kindNames.Marshal(k, "kind") }

// An Outcome is how a connection ended. The zero value is Refused.
type Outcome uint8

// The outcomes.
const (
	Refused        Outcome = iota // the Decider refused it
	BadRequest                    // not a request the proxy carries (origin form, bad line, huge head, bad host)
	AddressRefused                // the name resolved to an address no rule names, or did not resolve
	TLSRefused                    // no ClientHello, or its server name is not the host decided
	DialFailed                    // no checked address could be reached
	Carried                       // carried to its end (Err says why it ended, if not cleanly)
)

var outcomeNames = enumtext.Names[Outcome]{
	Refused: "refused", BadRequest: "bad-request", AddressRefused: "address-refused",
	TLSRefused: "tls-refused", DialFailed: "dial-failed", Carried: "carried",
}

// String returns the outcome's name, e.g. "address-refused".
func (o Outcome) String() string { return outcomeNames.String(o, "Outcome") }

// MarshalText returns o's name, or an error for a value that has none.
func (o Outcome) MarshalText() ([]byte, error) { return outcomeNames.Marshal(o, "outcome") }

// A Report is what the proxy tells the wiring about one connection (one
// request, for absolute-form HTTP) when it ends. Request is the zero value
// when the head could not be read; Verdict is the Decider's (zero when it
// was not asked); Addr is the address dialled (zero when none was). Sent
// counts the bytes sent to the upstream and Received those read from it:
// for a tunnel, the client's bytes (a replayed ClientHello included); for a
// forwarded request, everything on the upstream connection, heads included.
type Report struct {
	Kind     Kind
	Request  Request
	Verdict  Verdict
	Outcome  Outcome
	Addr     netip.AddrPort
	Sent     int64
	Received int64
	Start    time.Time
	Duration time.Duration
	Err      error
}
