package sandbox

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// ErrUnsupported is returned where the operating system offers no sandbox
// tier; such a server must be configured with the sandbox off.
var ErrUnsupported = errors.New("no sandbox on this operating system")

// A Tier is how a server is confined. The zero value, TierAuto, is the most
// confined tier the kernel allows: namespaces, else Landlock alone.
type Tier uint8

// The tiers.
const (
	TierAuto Tier = iota
	TierNamespaces
	TierLandlock
)

var tierNames = enumtext.Names[Tier]{TierAuto: "auto", TierNamespaces: "namespaces", TierLandlock: "landlock"}

// String returns the tier's name.
func (t Tier) String() string { return tierNames.String(t, "Tier") }

// MarshalText returns the tier's name.
func (t Tier) MarshalText() ([]byte, error) { return tierNames.Marshal(t, "sandbox tier") }

// UnmarshalText reads a tier's name; an unknown name is an error.
func (t *Tier) UnmarshalText(b []byte) error {
	if !tierNames.Set(t, string(b)) {
		return errors.New("unknown sandbox tier " + quote(b) + ": write auto, namespaces or landlock")
	}
	return nil
}

// A Network is what a sandboxed server may reach. The zero value,
// NetworkNone, is nothing.
type Network uint8

// The network modes. With NetworkProxy the server reaches one loopback
// port, where mcpwarden's egress proxy for it listens (see
// [Cmd.ProxyListener]), and nothing else.
const (
	NetworkNone Network = iota
	NetworkHost
	NetworkProxy
)

var networkNames = enumtext.Names[Network]{NetworkNone: "none", NetworkHost: "host", NetworkProxy: "proxy"}

// String returns the mode's name.
func (n Network) String() string { return networkNames.String(n, "Network") }

// MarshalText returns the mode's name.
func (n Network) MarshalText() ([]byte, error) { return networkNames.Marshal(n, "sandbox network") }

// UnmarshalText reads a mode's name; an unknown name is an error.
func (n *Network) UnmarshalText(b []byte) error {
	if !networkNames.Set(n, string(b)) {
		return errors.New("unknown sandbox network " + quote(b) + ": write proxy, none or host")
	}
	return nil
}

func quote(b []byte) string { return "\"" + string(b) + "\"" }

// Limits are the resource limits of a sandboxed server and its descendants.
// A zero field is its default (see [DefaultLimits]); there is no "unlimited".
type Limits struct {
	// Processes is the number of tasks (threads count) the server may run.
	// In TierNamespaces it counts the sandbox's own tasks; in TierLandlock
	// the kernel counts every task of the user, so the launcher allows the
	// user's current count plus Processes.
	Processes uint64 `json:"processes,omitempty"`
	// MemoryBytes bounds the private writable memory (RLIMIT_DATA) of each
	// process.
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	// OpenFiles bounds the open file descriptors of each process.
	OpenFiles uint64 `json:"open_files,omitempty"`
	// FileSizeBytes bounds the size of a file the server writes.
	FileSizeBytes uint64 `json:"file_size_bytes,omitempty"`
}

// DefaultLimits are the limits used for zero fields of [Limits]: enough for
// a Node or Python server, not enough to take the machine down.
var DefaultLimits = Limits{Processes: 512, MemoryBytes: 4 << 30, OpenFiles: 1024, FileSizeBytes: 1 << 30}

func (l Limits) withDefaults() Limits {
	if l.Processes == 0 {
		l.Processes = DefaultLimits.Processes
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultLimits.MemoryBytes
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultLimits.OpenFiles
	}
	if l.FileSizeBytes == 0 {
		l.FileSizeBytes = DefaultLimits.FileSizeBytes
	}
	return l
}

// A Feature is a kernel feature the sandbox uses, named so that [Probe] and
// [Policy.Disable] can say which one is missing. The zero Feature names
// none: it disables nothing and its text is refused.
type Feature uint8

// The features, with their names in the comments.
const (
	FeatureUserNamespaces Feature = iota + 1 // "user_namespaces"
	FeatureLandlock                          // "landlock"
	FeatureLandlockNet                       // "landlock_net"
	FeatureLandlockScope                     // "landlock_scope"
	FeatureSeccomp                           // "seccomp"
	// FeatureMounts ("mounts") is mounting in tier namespaces' own mount
	// namespace, which a kernel may refuse even where it allows the user
	// namespace (AppArmor's restrict_unprivileged_userns gives it no
	// capability).
	FeatureMounts
	// FeatureSeatbelt ("seatbelt") is macOS's sandbox-exec, which confines
	// there instead of all of the above; it is reported missing, never
	// disabled.
	FeatureSeatbelt
)

var featureNames = enumtext.Names[Feature]{
	FeatureUserNamespaces: "user_namespaces", FeatureLandlock: "landlock", FeatureLandlockNet: "landlock_net",
	FeatureLandlockScope: "landlock_scope", FeatureSeccomp: "seccomp", FeatureMounts: "mounts", FeatureSeatbelt: "seatbelt",
}

// String returns the feature's name, or "Feature(N)" for an invalid one.
func (f Feature) String() string { return featureNames.String(f, "Feature") }

// MarshalText returns the feature's name; an invalid feature is an error.
func (f Feature) MarshalText() ([]byte, error) {
	if f == 0 {
		return nil, errors.New("invalid sandbox feature 0")
	}
	return featureNames.Marshal(f, "sandbox feature")
}

// UnmarshalText reads a feature's name; anything else is an error.
func (f *Feature) UnmarshalText(b []byte) error {
	if !featureNames.Set(f, string(b)) || *f == 0 {
		*f = 0
		return fmt.Errorf("unknown sandbox feature %q", b)
	}
	return nil
}

// ParseFeature reads the name of a feature that can be disabled, for the
// config's sandbox.disable and doctor's --disable: any but seatbelt.
func ParseFeature(s string) (Feature, error) {
	if f, ok := featureNames.Lookup(s); ok && f != 0 && f != FeatureSeatbelt {
		return f, nil
	}
	return 0, fmt.Errorf("unknown sandbox feature %q: write %s", s, strings.Join(featureNames[FeatureUserNamespaces:FeatureSeatbelt], ", "))
}

// A Policy is what a sandboxed server may do: plain data, sent to the
// launcher as JSON. The zero value is the most confined sandbox: the best
// tier, no network, default limits, the system directories readable and
// nothing writable, an environment of the allowlist alone, and every
// confinement required.
type Policy struct {
	// Tier is the mechanism; TierAuto picks namespaces when the kernel
	// allows them and Landlock alone otherwise.
	Tier Tier `json:"tier"`
	// Exec are read-and-execute directories besides the system ones: the
	// server's installation and its package caches. The resolved
	// command's own directory is added by [Command].
	Exec []string `json:"exec,omitempty"`
	// Read are read-only directories or files (no execute).
	Read []string `json:"read,omitempty"`
	// Write are read-write directories (the workspace, sandbox.write);
	// nothing in them may be executed.
	Write []string `json:"write,omitempty"`
	// Home and TmpDir are the server's private HOME and TMPDIR, read-write
	// and not executable; empty leaves HOME and TMPDIR unset.
	Home   string `json:"home,omitempty"`
	TmpDir string `json:"tmpdir,omitempty"`
	// Hide are mcpwarden's own files and directories that a grant reaches
	// (a config kept in the workspace, say). Tier namespaces masks each
	// in the server's mount namespace; tier landlock cannot, so it
	// reports the mask missing.
	Hide []string `json:"hide,omitempty"`
	// ReadOnly are files a writable grant reaches that the server may
	// read but never write: self-protection's (a client config in the
	// workspace, say). Tier namespaces binds each read-only; tier
	// landlock cannot, and upstream names them in its log.
	ReadOnly []string `json:"read_only,omitempty"`
	// Env are the server's own variables, "NAME=value".
	Env []string `json:"env,omitempty"`
	// Passthrough names variables of mcpwarden's environment passed on;
	// MCPWARDEN_* is never passed, whatever is named.
	Passthrough []string `json:"passthrough,omitempty"`
	// Network is what the server may reach.
	Network Network `json:"network"`
	// UnixSockets lets the server create unix sockets other than by
	// socketpair. Below Landlock ABI 9 connecting to a pathname socket is
	// not confined by Landlock, so it is off by default.
	UnixSockets bool `json:"unix_sockets,omitempty"`
	// Limits are the resource limits.
	Limits Limits `json:"limits"`
	// BestEffort starts the server with what could be applied when some
	// confinement is missing (config `sandbox.require: false`); by default
	// a server that cannot be confined as configured does not start.
	BestEffort bool `json:"best_effort,omitempty"`
	// Disable treats these kernel features as missing, to see what the
	// sandbox does on a kernel without them (doctor, tests).
	Disable []Feature `json:"disable,omitempty"`
}

func (p Policy) disabled(f Feature) bool {
	for _, d := range p.Disable {
		if d == f {
			return true
		}
	}
	return false
}

// SystemExec are the directories every sandboxed server may read and
// execute (those that exist).
var SystemExec = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// SystemRead are the read-only system paths (no execute) that exist: what
// the dynamic loader, libc's name service, TLS and time zones read in
// /etc, not /etc as a whole, where a system-wide mcpwarden config or
// another program's secrets may live.
var SystemRead = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload",
	"/etc/localtime", "/etc/timezone", "/etc/zoneinfo",
	"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf",
	"/etc/services", "/etc/protocols", "/etc/networks",
	"/etc/passwd", "/etc/group",
	"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/crypto-policies",
	"/etc/mime.types", "/etc/os-release", "/etc/locale.alias", "/etc/alternatives",
}

// EnvAllow are the variables of mcpwarden's environment every server gets;
// a name ending in "*" is a prefix.
var EnvAllow = []string{"PATH", "LANG", "LC_*", "TZ", "TERM"}
