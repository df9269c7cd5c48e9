// Package config loads and validates an mcpwarden configuration: a YAML,
// JSON or TOML file, overridden by MCPWARDEN_* environment variables, in the
// shape of DESIGN.md §5. A Config that Load returns has been validated as a
// whole; nothing in it is half-applied.
package config

import (
	"time"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// ListenStdio is the Listen value that serves the client over stdin/stdout.
const ListenStdio = "stdio"

// A Config is a whole mcpwarden configuration.
type Config struct {
	// Listen is "stdio" (the default) or a host:port for streamable HTTP at /mcp.
	Listen string `koanf:"listen"`
	// Auth guards the HTTP listener.
	Auth Auth `koanf:"auth"`
	// Naming controls the wire names tools get.
	Naming Naming `koanf:"naming"`
	// Servers are the upstream MCP servers, keyed by their name in canonical
	// tool names (mcp:<server>:<tool>).
	Servers map[string]Server `koanf:"servers"`
	// Policy is the global gate.
	Policy rules.PolicySpec `koanf:"policy"`
	// PathKeys overrides the argument keys treated as paths (nil: the default list).
	PathKeys []string `koanf:"path_keys"`
	// Ask configures how "ask" decisions reach a human.
	Ask Ask `koanf:"ask"`
	// Audit configures the audit log.
	Audit audit.Config `koanf:"audit"`
	// Log configures the human log on stderr.
	Log Log `koanf:"log"`

	// Dir is the directory of the config file; relative cwd values are
	// resolved against it. Not read from the file.
	Dir string `koanf:"-"`
	// File is the path the config was loaded from. Not read from the file.
	File string `koanf:"-"`
}

// Auth holds the listener's bearer token settings.
type Auth struct {
	// BearerTokenEnv names the environment variable holding the token that
	// HTTP clients must send. Required when Listen is not a loopback address.
	BearerTokenEnv string `koanf:"bearer_token_env"`
}

// Naming controls how canonical names become wire names.
type Naming struct {
	// Separator joins server and tool in wire names; "" means "__".
	Separator string `koanf:"separator"`
}

// Ask configures how "ask" decisions are resolved.
type Ask struct {
	// Timeout bounds the wait for the human's answer; 0 means
	// DefaultAskTimeout. No answer in time denies the call.
	Timeout time.Duration `koanf:"timeout"`
}

// DefaultAskTimeout is how long an ask waits for an answer when the config
// sets no ask.timeout.
const DefaultAskTimeout = 60 * time.Second

// Log configures the human log on stderr.
type Log struct {
	Level  string `koanf:"level"`  // debug, info (default), warn, error
	Format string `koanf:"format"` // text (default) or json
}

// A Server is one upstream MCP server: a stdio command, or a URL reached over
// streamable HTTP (the default for a URL) or legacy SSE (transport: sse).
type Server struct {
	Command   string            `koanf:"command"`
	Args      []string          `koanf:"args"`
	Env       map[string]string `koanf:"env"`
	Cwd       string            `koanf:"cwd"`
	URL       string            `koanf:"url"`
	Transport string            `koanf:"transport"` // "", stdio, http, sse
	Headers   map[string]string `koanf:"headers"`
	// PathRoot is the directory relative path arguments are joined to for a
	// remote server; without one a relative path never satisfies an allow.
	PathRoot string `koanf:"path_root"`
	// Aliases maps an upstream tool name to the wire name to expose it under.
	Aliases map[string]string `koanf:"aliases"`
	// InitTimeout bounds connecting and initializing; 0 means 30s.
	InitTimeout time.Duration `koanf:"init_timeout"`
	// Policy is this server's gate; it applies in addition to the global one.
	Policy rules.PolicySpec `koanf:"policy"`
}

// Transport values.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// DefaultInitTimeout bounds an upstream's connect and initialize when the
// config sets none.
const DefaultInitTimeout = 30 * time.Second

// EffectiveTransport is the transport the server is reached over.
func (s Server) EffectiveTransport() string {
	switch {
	case s.Transport != "":
		return s.Transport
	case s.URL != "":
		return TransportHTTP
	default:
		return TransportStdio
	}
}
