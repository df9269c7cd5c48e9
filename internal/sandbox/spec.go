package sandbox

// A spec is what the parent sends the launcher on its policy pipe: the
// policy, the tier chosen, and the command with its environment already
// decided, so the launcher's own environment never reaches the server.
type spec struct {
	Policy Policy   `json:"policy"`
	Tier   Tier     `json:"tier"`
	Path   string   `json:"path"`
	Argv   []string `json:"argv"`
	Env    []string `json:"env"`
	// ProxyPort is, with NetworkProxy, the one TCP port on 127.0.0.1 the
	// server may connect to: its egress proxy's.
	ProxyPort uint16 `json:"proxy_port,omitempty"`
	// Supervised is set when the launcher runs under its supervisor (see
	// supervise), which ends every descendant of the server.
	Supervised bool `json:"supervised,omitempty"`
}

// The launcher's inherited descriptors: the spec to read, the report to
// write and, with NetworkProxy in TierNamespaces, the unix socket on which
// it sends the parent the proxy's listening socket. All are closed on exec.
const (
	specFD     = 3
	reportFD   = 4
	listenerFD = 5
)

// maxSpec bounds the spec read from the pipe.
const maxSpec = 1 << 20
