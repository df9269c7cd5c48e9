package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Probe finds what the kernel offers, treating the features p.Disable
// names as missing (so doctor and tests can see a kernel without them
// without mocking the kernel). It starts one short-lived process to try a
// user namespace.
func Probe(p Policy) Support {
	s := Support{Missing: map[Feature]string{}}
	miss := func(f Feature, why string) { s.Missing[f] = why }

	switch {
	case p.disabled(FeatureUserNamespaces):
		miss(FeatureUserNamespaces, "disabled by the policy")
	default:
		if err := tryUserNamespace(); err != nil {
			miss(FeatureUserNamespaces, err.Error())
		} else {
			s.UserNamespaces = true
		}
	}

	s.LandlockABI = landlockABI(p)
	switch {
	case p.disabled(FeatureLandlock):
		miss(FeatureLandlock, "disabled by the policy")
	case s.LandlockABI < 1:
		miss(FeatureLandlock, "the kernel has no Landlock (enable CONFIG_SECURITY_LANDLOCK and lsm=landlock)")
	}
	switch {
	case p.disabled(FeatureLandlockNet):
		miss(FeatureLandlockNet, "disabled by the policy")
	case s.LandlockABI < 4:
		miss(FeatureLandlockNet, fmt.Sprintf("Landlock ABI %d has no TCP rules (Linux 6.7 has)", s.LandlockABI))
	}
	switch {
	case p.disabled(FeatureLandlockScope):
		miss(FeatureLandlockScope, "disabled by the policy")
	case s.LandlockABI < 6:
		miss(FeatureLandlockScope, fmt.Sprintf("Landlock ABI %d has no signal and socket scoping (Linux 6.12 has)", s.LandlockABI))
	}

	switch _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); {
	case p.disabled(FeatureSeccomp):
		miss(FeatureSeccomp, "disabled by the policy")
	case err != nil:
		miss(FeatureSeccomp, "the kernel has no seccomp: "+err.Error())
	default:
		s.Seccomp = true
	}
	if len(s.Missing) == 0 {
		s.Missing = nil
	}
	return s
}

// tryUserNamespace runs true in a new user namespace.
func tryUserNamespace() error {
	path, err := exec.LookPath("true")
	if err != nil {
		return errors.New("no true command to try a user namespace with")
	}
	cmd := exec.Command(path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the kernel refuses unprivileged user namespaces: %w", err)
	}
	return nil
}
