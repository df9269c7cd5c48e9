package sandbox

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// procAttr starts the launcher in a new session (no controlling terminal),
// killed when mcpwarden dies, and for TierNamespaces in new user, mount,
// PID, network and IPC namespaces whose only user and group are the
// caller's own. With NetworkProxy in TierNamespaces the launcher keeps
// CAP_NET_ADMIN in its namespaces across its exec (an ambient capability),
// to bring the loopback up; it drops every capability before it executes
// the server.
func procAttr(t Tier, n Network) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if t == TierNamespaces {
		uid, gid := os.Getuid(), os.Getgid()
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
		// The launcher shapes its mount namespace after exec, which drops
		// a non-root user's capabilities but for ambient ones; it clears
		// this one before it executes the server (see setupMounts).
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
		if n == NetworkProxy {
			a.AmbientCaps = append(a.AmbientCaps, unix.CAP_NET_ADMIN)
		}
	}
	return a
}
