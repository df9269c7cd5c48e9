package sandbox

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// A Confinement is one thing the launcher applies. The zero Confinement
// is none; its text is refused.
type Confinement uint8

// The confinements, in the order the launcher applies them, with their
// names in the comments.
const (
	ConfineUserNamespace  Confinement = iota + 1 // "user_namespace"
	ConfinePIDNamespace                          // "pid_namespace"
	ConfineNetNamespace                          // "net_namespace"
	ConfineIPCNamespace                          // "ipc_namespace"
	ConfineMountNamespace                        // "mount_namespace"
	ConfineMaskOwnFiles                          // "masked_own_files"
	ConfineNoExecWritable                        // "noexec_writable"
	// ConfineReadOnlyOwnFiles: self-protection's files inside a writable
	// grant are bound read-only.
	ConfineReadOnlyOwnFiles // "read_only_protected_files"
	ConfineSession          // "new_session"
	ConfineEnvironment      // "environment"
	ConfineNoNewPrivs       // "no_new_privs"
	ConfineLandlockFS       // "landlock_fs"
	ConfineLandlockNet      // "landlock_tcp"
	ConfineScopeSignal      // "landlock_scope_signal"
	ConfineScopeAbstract    // "landlock_scope_abstract_unix"
	ConfineSeccomp          // "seccomp"
	ConfineLimits           // "rlimits"
	ConfineCoreDumps        // "no_core_dumps"
	ConfineDescendants      // "descendants_end_with_server"
	// ConfineSeatbelt is the macOS Seatbelt profile from
	// [SeatbeltProfile].
	ConfineSeatbelt // "seatbelt"
)

var confinementNames = enumtext.Names[Confinement]{
	ConfineUserNamespace:    "user_namespace",
	ConfinePIDNamespace:     "pid_namespace",
	ConfineNetNamespace:     "net_namespace",
	ConfineIPCNamespace:     "ipc_namespace",
	ConfineMountNamespace:   "mount_namespace",
	ConfineMaskOwnFiles:     "masked_own_files",
	ConfineNoExecWritable:   "noexec_writable",
	ConfineReadOnlyOwnFiles: "read_only_protected_files",
	ConfineSession:          "new_session",
	ConfineEnvironment:      "environment",
	ConfineNoNewPrivs:       "no_new_privs",
	ConfineLandlockFS:       "landlock_fs",
	ConfineLandlockNet:      "landlock_tcp",
	ConfineScopeSignal:      "landlock_scope_signal",
	ConfineScopeAbstract:    "landlock_scope_abstract_unix",
	ConfineSeccomp:          "seccomp",
	ConfineLimits:           "rlimits",
	ConfineCoreDumps:        "no_core_dumps",
	ConfineDescendants:      "descendants_end_with_server",
	ConfineSeatbelt:         "seatbelt",
}

// String returns the confinement's name, or "Confinement(N)" for an
// invalid one.
func (c Confinement) String() string { return confinementNames.String(c, "Confinement") }

// MarshalText returns the confinement's name; an invalid one is an error.
func (c Confinement) MarshalText() ([]byte, error) {
	if c == 0 {
		return nil, errors.New("invalid confinement 0")
	}
	return confinementNames.Marshal(c, "confinement")
}

// UnmarshalText reads a confinement's name; anything else is an error.
func (c *Confinement) UnmarshalText(b []byte) error {
	if !confinementNames.Set(c, string(b)) || *c == 0 {
		*c = 0
		return fmt.Errorf("unknown confinement %q", b)
	}
	return nil
}

// A Report is what the launcher applied before it executed the server.
type Report struct {
	// Tier is the tier the launcher ran in (never TierAuto).
	Tier Tier `json:"tier"`
	// Network is what the server may reach; with NetworkProxy, ProxyPort
	// is its egress proxy's port on 127.0.0.1 (in tier namespaces, the
	// loopback of the server's own network namespace).
	Network   Network `json:"network"`
	ProxyPort uint16  `json:"proxy_port,omitempty"`
	// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock.
	LandlockABI int `json:"landlock_abi"`
	// Applied are the confinements in force, in the order applied.
	Applied []Confinement `json:"applied"`
	// Missing are the confinements the policy wanted that are not in force,
	// each with why.
	Missing []Missing `json:"missing,omitempty"`
	// Masked are mcpwarden's own files and directories hidden from the
	// server (with ConfineMaskOwnFiles).
	Masked []string `json:"masked,omitempty"`
	// ExecWritable are the writable directories left executable (with
	// ConfineNoExecWritable): a package runner's cache, or the server's
	// own installation inside its workspace.
	ExecWritable []string `json:"exec_writable,omitempty"`
	// ReadOnly are the files bound read-only (with
	// ConfineReadOnlyOwnFiles).
	ReadOnly []string `json:"read_only,omitempty"`
	// PID is the server's process ID when it is not the process
	// mcpwarden started: under tier landlock's supervisor, the server is
	// the supervisor's child. 0 means the started process is the server.
	PID int `json:"pid,omitempty"`
	// Started is false when the launcher refused to execute the server.
	Started bool `json:"started"`
	// Error says why the launcher did not execute the server.
	Error string `json:"error,omitempty"`
}

// A Missing is a confinement the launcher could not apply.
type Missing struct {
	Confinement Confinement `json:"confinement"`
	Reason      string      `json:"reason"`
}

// Has reports whether c is in force.
func (r Report) Has(c Confinement) bool {
	for _, a := range r.Applied {
		if a == c {
			return true
		}
	}
	return false
}

// String is a one-line account of the report, for logs.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tier %s, network %s", r.Tier, r.Network)
	if r.Network == NetworkProxy && r.ProxyPort != 0 {
		fmt.Fprintf(&b, " (127.0.0.1:%d)", r.ProxyPort)
	}
	fmt.Fprintf(&b, ", Landlock ABI %d, applied %v", r.LandlockABI, r.Applied)
	if len(r.Masked) > 0 {
		fmt.Fprintf(&b, "; masked %d of mcpwarden's files %v", len(r.Masked), r.Masked)
	}
	if len(r.ReadOnly) > 0 {
		fmt.Fprintf(&b, "; read-only %v", r.ReadOnly)
	}
	if len(r.ExecWritable) > 0 {
		fmt.Fprintf(&b, "; writable and executable %v", r.ExecWritable)
	}
	for _, m := range r.Missing {
		fmt.Fprintf(&b, "; missing %s (%s)", m.Confinement, m.Reason)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "; not started: %s", r.Error)
	}
	return b.String()
}

// An IncompleteError is the error of a server that was not started because
// confinements it requires are missing.
type IncompleteError struct{ Report Report }

func (e *IncompleteError) Error() string {
	names := make([]string, 0, len(e.Report.Missing))
	for _, m := range e.Report.Missing {
		names = append(names, fmt.Sprintf("%s (%s)", m.Confinement, m.Reason))
	}
	return "sandbox incomplete, server not started: missing " + strings.Join(names, ", ") +
		"; fix the kernel feature, or set sandbox.require: false to start it with what is possible"
}
