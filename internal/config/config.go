// Package config loads and validates an mcpwarden configuration: a YAML,
// JSON or TOML file, overridden by MCPWARDEN_* environment variables, in the
// shape docs/configuration.md shows (every key: docs/config.md, which
// go generate writes from these types). A Config that Load returns has been
// validated as a whole; nothing in it is half-applied.
package config

import (
	"time"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/oauth"
	"github.com/mcpwarden/mcpwarden/internal/pin"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
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
	// HTTP hardens the HTTP listener (Host and Origin allowlists, body limit).
	HTTP HTTP `koanf:"http"`
	// Naming controls the wire names tools get.
	Naming Naming `koanf:"naming"`
	// Servers are the upstream MCP servers, keyed by their name in canonical
	// tool names (mcp:<server>:<tool>).
	Servers map[string]Server `koanf:"servers"`
	// Policy is the global gate.
	Policy rules.PolicySpec `koanf:"policy"`
	// Enforce is enforce (the default: the policy's decisions are carried
	// out) or shadow (they are audited with shadow: true and the decision
	// each request would have had, and the request is forwarded as allowed,
	// nothing asked; built-in refusals still refuse). A server's enforce,
	// else its client's profile's, wins over this one.
	Enforce rules.Enforce `koanf:"enforce"`
	// Profiles are client profiles, keyed by name: each sees some servers
	// and adds its own policy as a third gate (see Profile).
	Profiles map[string]Profile `koanf:"profiles"`
	// PathKeys overrides the argument keys treated as paths (nil: the default list).
	PathKeys []string `koanf:"path_keys"`
	// URLKeys overrides the argument keys treated as URLs (nil: the default
	// list), whose parts rules reach as url.host and the like.
	URLKeys []string `koanf:"url_keys"`
	// CommandKeys overrides the argument keys treated as shell commands
	// (nil: the default list), on which an allow covers one simple command.
	CommandKeys []string `koanf:"command_keys"`
	// PathsCaseInsensitive says whether paths compare case-insensitively:
	// auto (the default: as the host's filesystems do, so on macOS and
	// Windows), true or false.
	PathsCaseInsensitive CaseRule `koanf:"paths_case_insensitive"`
	// Ask configures how "ask" decisions reach a human.
	Ask Ask `koanf:"ask"`
	// Audit configures the audit log.
	Audit audit.Config `koanf:"audit"`
	// Log configures the human log on stderr.
	Log Log `koanf:"log"`
	// Pin configures tool-definition pinning (the rug-pull defence).
	Pin Pin `koanf:"pin"`
	// MaxInflightMB bounds the MiB of arguments and results held by
	// tools/calls in flight; a call beyond it is refused, naming this
	// setting. 0 means 256. Read at start, not on reload.
	MaxInflightMB int `koanf:"max_inflight_mb"`
	// StartupWait bounds how long after start a request that lists or
	// reaches the upstreams waits for those still on their first start
	// (a tools/call of a tool not listed yet waits for it up to each
	// server's init_timeout instead). 0 means DefaultStartupWait. Read at
	// start, not on reload.
	StartupWait time.Duration `koanf:"startup_wait"`
	// Telemetry holds the top-level keys metrics (a Prometheus endpoint)
	// and tracing (OpenTelemetry over OTLP/HTTP); both are off by default.
	Telemetry telemetry.Config `koanf:",squash"`
	// State, when set, shares sessions, grants and asks with other
	// replicas through Redis; nil keeps them in memory.
	State *State `koanf:"state"`
	// Replica names this mcpwarden among many sharing one state: it is
	// written in every audit event, so that each replica's audit chain
	// says whose it is. "" means the host name with a state block and
	// none without (see ReplicaID).
	Replica string `koanf:"replica"`
	// Sandbox is the default sandbox of the stdio servers (see Sandbox);
	// nil is the defaults: on.
	Sandbox *Sandbox `koanf:"sandbox"`
	// SessionPolicy holds the top-level keys labels and flow.
	SessionPolicy `koanf:",squash"`

	// Dir is the directory of the config file; relative cwd values are
	// resolved against it. Not read from the file.
	Dir string `koanf:"-"`
	// File is the path the config was loaded from. Not read from the file.
	File string `koanf:"-"`
	// Warnings are problems that did not stop the load (an MCPWARDEN_
	// variable that is no config key), one sentence each, to be logged.
	Warnings []string `koanf:"-"`

	// source is the config text errors are about, and its name in them
	// ("config FILE").
	source textSource
	// envSources says which keys environment variables set.
	envSources envSources
}

// Auth holds the listener's bearer token settings.
type Auth struct {
	// BearerTokenEnv names the environment variable holding the token that
	// HTTP clients must send. Required when Listen is not a loopback address
	// (unless profile tokens authenticate clients).
	BearerTokenEnv string `koanf:"bearer_token_env"`
	// OAuth, when set, makes the listener an OAuth 2.1 resource server
	// accepting the issuer's access tokens (see oauth.Config). It is
	// validated but not yet served: the listener middleware comes next,
	// and until then it does not count as authenticating a listener.
	OAuth *oauth.Config `koanf:"oauth"`
}

// HTTP hardens the streamable HTTP listener. Its zero value accepts only
// the localhost names (localhost, 127.0.0.1, [::1], any port) as Host and
// Origin, and bodies up to DefaultMaxBodyBytes.
type HTTP struct {
	// AllowedHosts are Host header values accepted in addition to the
	// localhost names and the listen host: "name" accepts any port,
	// "name:port" only that port. Any other Host gets 403 (DNS rebinding).
	AllowedHosts []string `koanf:"allowed_hosts"`
	// AllowedOrigins are browser origins ("https://app.example.com",
	// matched exactly) accepted in addition to http(s) origins on the
	// localhost names. A request with another Origin gets 403; one without
	// an Origin header (a non-browser client) is not refused for that.
	AllowedOrigins []string `koanf:"allowed_origins"`
	// MaxBodyBytes caps a request body; 0 means 4 MiB. A larger body
	// gets 413.
	MaxBodyBytes int64 `koanf:"max_body_bytes"`
	// SessionIdleTimeout ends a session that has had no request in
	// progress for this long, as a DELETE would; 0 means 30m. A client
	// that comes back after it gets 404 and initializes again.
	SessionIdleTimeout time.Duration `koanf:"session_idle_timeout"`
	// MaxSessions caps the live sessions of all principals together; 0
	// means 1000. An initialize at it ends the least recently used idle
	// session (its client gets 404), and gets 503 only when every session
	// is busy.
	MaxSessions int `koanf:"max_sessions"`
	// MaxSessionsPerPrincipal caps the live sessions of one principal
	// (a token's, or anonymous without auth); 0 means 100. An initialize
	// at it ends the principal's least recently used idle session, and
	// gets 429 only when every one of them is busy.
	MaxSessionsPerPrincipal int `koanf:"max_sessions_per_principal"`
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
	// Elicitation, when false, never asks the calling client through MCP
	// elicitation, for clients that declare it but do not show it; nil or
	// true asks clients that declare it.
	Elicitation *bool `koanf:"elicitation"`
	// Approvals is "local" to hold asks the client cannot be asked and list
	// them on a loopback approvals page and by mcpwarden approvals; "" or
	// "off" does not.
	Approvals string `koanf:"approvals"`
	// ApprovalsListen is the loopback host:port of the approvals page;
	// "" means DefaultApprovalsListen.
	ApprovalsListen string `koanf:"approvals_listen"`
	// TokenFile is where the approvals page's per-run token and URL are
	// written (mode 0600), relative to the config file's directory; ""
	// means a file named for the config in StateDir (see TokenFilePath).
	TokenFile string `koanf:"token_file"`
	// Resolver is an external program or URL that answers asks no client
	// and no approvals page answered.
	Resolver AskResolver `koanf:"resolver"`
}

// An AskResolver is an external resolver: a command or an HTTPS endpoint
// that gets the ask as JSON and answers {"decision": "allow_once" |
// "allow_session" | "deny"}. Anything else, an error or no answer within
// Timeout denies the call.
type AskResolver struct {
	// Command is the program and its arguments; the ask is on its stdin,
	// the answer on its stdout.
	Command []string `koanf:"command"`
	// URL receives the ask as a POST, signed with HMAC-SHA256 (header
	// X-Mcpwarden-Signature) using the secret in the environment variable
	// SecretEnv. It must be https, or http on a loopback address.
	URL       string `koanf:"url"`
	SecretEnv string `koanf:"secret_env"`
	// Timeout bounds one answer; 0 means 30s. ask.timeout bounds it too.
	Timeout time.Duration `koanf:"timeout"`
}

// Ask.Approvals values.
const (
	ApprovalsOff   = "off"
	ApprovalsLocal = "local"
)

// DefaultApprovalsListen is where the approvals page listens when
// ask.approvals_listen is not set.
const DefaultApprovalsListen = "127.0.0.1:8766"

// DefaultAskTimeout is how long an ask waits for an answer when the config
// sets no ask.timeout.
const DefaultAskTimeout = 60 * time.Second

// Pin configures tool-definition pinning: each tool's definition is
// recorded in a lock file on first sight and later definitions are
// compared with it.
type Pin struct {
	// Lock is the lock file's path, relative to the config file's
	// directory; "" means mcpwarden.lock.
	Lock string `koanf:"lock"`
	// OnToolChange is the default reaction to a changed definition: warn,
	// ask (the default), deny or hide. A server's on_tool_change overrides it.
	OnToolChange pin.Reaction `koanf:"on_tool_change"`
}

// DefaultLockFile is the lock file's name when pin.lock is not set.
const DefaultLockFile = "mcpwarden.lock"

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
	// OAuth makes mcpwarden an OAuth client of this remote server (see ServerOAuth).
	OAuth *ServerOAuth `koanf:"oauth"`
	// PathRoot is the directory relative path arguments are joined to for a
	// remote server; without one a relative path never satisfies an allow.
	// For a stdio server it is one more directory relative paths are also
	// read against, besides its cwd and the directories it is given as
	// arguments (see ExtraRoots): for a server told its directory another
	// way, such as an environment variable.
	PathRoot string `koanf:"path_root"`
	// PathHome is the directory a leading `~` in path arguments stands for.
	// For a stdio server it defaults to HOME in its env, else mcpwarden's
	// own home; for a remote one, without it a `~` path never satisfies an
	// allow.
	PathHome string `koanf:"path_home"`
	// Aliases maps an upstream tool name to the wire name to expose it under.
	Aliases map[string]string `koanf:"aliases"`
	// ResolveSymlinks also decides each path argument with its symlinks
	// followed, the more restrictive verdict standing. nil: true for a stdio
	// server, false for a remote one (whose paths are usually not on this
	// machine; set it for one that runs here).
	ResolveSymlinks *bool `koanf:"resolve_symlinks"`
	// Prefix false exposes the server's tools under their own names instead
	// of <server>__<tool> (nil: true).
	Prefix *bool `koanf:"prefix"`
	// InitTimeout bounds connecting and initializing; 0 means 30s.
	InitTimeout time.Duration `koanf:"init_timeout"`
	// CallTimeout bounds one tools/call (queueing included); 0 means 120s.
	// On expiry the upstream is sent notifications/cancelled.
	CallTimeout time.Duration `koanf:"call_timeout"`
	// MaxResultBytes caps one message from the upstream (a call's result);
	// 0 means 32 MiB. A larger result is discarded and the call fails.
	MaxResultBytes int64 `koanf:"max_result_bytes"`
	// MaxConcurrentCalls bounds the calls in flight to the upstream; 0 means
	// 16. MaxQueuedCalls bounds those waiting for a slot beyond it; 0 means
	// 64. A call beyond both fails at once with a "busy" error.
	MaxConcurrentCalls int `koanf:"max_concurrent_calls"`
	MaxQueuedCalls     int `koanf:"max_queued_calls"`
	// Isolation is who shares the child process of a stdio server:
	// shared ("", everyone), per_principal or per_session (a child each,
	// started on first use). IsolationIdleTimeout stops a child unused that
	// long (0 means 10m); IsolationMax caps the children running at once
	// (0 means 16).
	Isolation            string        `koanf:"isolation"`
	IsolationIdleTimeout time.Duration `koanf:"isolation_idle_timeout"`
	IsolationMax         int           `koanf:"isolation_max"`
	// OnToolChange is the reaction when a tool's definition differs from
	// the one pinned in the lock file: warn, ask, deny or hide; "" means
	// pin.on_tool_change (itself ask by default).
	OnToolChange pin.Reaction `koanf:"on_tool_change"`
	// Policy is this server's gate; it applies in addition to the global one.
	Policy rules.PolicySpec `koanf:"policy"`
	// Enforce is enforce or shadow for this server's requests, whatever
	// the profile's and the top-level enforce say; "" leaves it to them.
	Enforce rules.Enforce `koanf:"enforce"`
	// Sandbox overrides the top-level sandbox for this stdio server;
	// `sandbox: off` runs it unconfined.
	Sandbox *Sandbox `koanf:"sandbox"`
	// Results is what to do with this server's results that hold a
	// credential; "" takes the top-level results (see SessionPolicy).
	Results string `koanf:"results"`
}

// Isolation values.
const (
	IsolationShared       = "shared"
	IsolationPerPrincipal = "per_principal"
	IsolationPerSession   = "per_session"
)

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
