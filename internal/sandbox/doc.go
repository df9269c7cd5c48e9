// Package sandbox confines the stdio servers mcpwarden starts, with the
// kernel and without root: the parent side ([Command]) re-executes mcpwarden
// as a launcher with the [Policy] on an inherited pipe, and the launcher
// side ([Main]) applies resource limits, no_new_privs, Landlock (files, TCP,
// signal and abstract-socket scoping) and a seccomp filter to itself, writes
// a [Report] of exactly what it applied, and only then executes the server,
// so the server is confined from its first instruction.
//
// Two tiers exist on Linux. [TierNamespaces] also starts the launcher in new
// user, mount, PID, network and IPC namespaces, so the server is PID 1 of
// its own namespace and every descendant dies with it. [TierLandlock] is
// for kernels that refuse unprivileged namespaces: the server leads its own
// session and process group, seccomp forbids setsid and setpgid so no
// descendant can leave that group, and [Cmd.Wait] kills the group once the
// server is gone. Elsewhere [Command] returns [ErrUnsupported].
package sandbox
