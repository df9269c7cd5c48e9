package sandbox

// A Support is what the kernel offers the sandbox, as [Probe] found it.
type Support struct {
	// UserNamespaces is whether an unprivileged process may make user (and
	// so PID, network, mount, IPC) namespaces: tier namespaces.
	UserNamespaces bool `json:"user_namespaces"`
	// LandlockABI is the Landlock ABI version, 0 without Landlock.
	LandlockABI int `json:"landlock_abi"`
	// Seccomp is whether seccomp filters can be loaded.
	Seccomp bool `json:"seccomp"`
	// Missing says, for each feature missing, why.
	Missing map[Feature]string `json:"missing,omitempty"`
}

// Tier is the tier TierAuto resolves to with this support.
func (s Support) Tier() Tier {
	if s.UserNamespaces {
		return TierNamespaces
	}
	return TierLandlock
}
