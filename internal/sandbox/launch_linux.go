package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Main is the launcher: mcpwarden's hidden sandbox subcommand (and a test
// binary's, see the tests) calls it and nothing else. It reads the spec
// [Command] sent, confines this process, writes the [Report] and executes
// the server; it returns only by exiting non-zero, after writing a report
// that says why the server was not started.
func Main() {
	// Confinement and exec happen on this one thread.
	runtime.LockOSThread()
	if len(os.Args) > 2 && os.Args[2] == superviseArg {
		os.Exit(supervise())
	}
	rep, sp, limits, err := launch()
	if err == nil {
		err = finish(rep, sp, limits)
	}
	fmt.Fprintf(os.Stderr, "mcpwarden sandbox: %v\n", err)
	os.Exit(126)
}

// finish sets the limits, writes the report and executes the server. The
// limits come last, and after them nothing is allocated (the report is
// encoded and exec's arguments are converted before), so the launcher's
// own runtime (a race-detector build's shadow memory, say) is not held to
// the server's budget.
func finish(rep Report, sp spec, limits []rlimit) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("encoding the sandbox report: %w", err)
	}
	path, err := syscall.BytePtrFromString(sp.Path)
	if err != nil {
		return fmt.Errorf("executing %q: %w", sp.Path, err)
	}
	argv, err := syscall.SlicePtrFromStrings(sp.Argv)
	if err != nil {
		return fmt.Errorf("executing %q: %w", sp.Path, err)
	}
	envv, err := syscall.SlicePtrFromStrings(sp.Env)
	if err != nil {
		return fmt.Errorf("executing %q: %w", sp.Path, err)
	}
	if err := setLimits(limits); err != nil {
		return err
	}
	for len(b) > 0 {
		n, err := unix.Write(reportFD, b)
		if err != nil {
			return fmt.Errorf("writing the sandbox report: %w", err)
		}
		b = b[n:]
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(path)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	return fmt.Errorf("executing %q: %w", sp.Path, errno)
}

// launch reads the spec and confines the process but for its resource
// limits, which it returns. With an error the report is written already.
func launch() (Report, spec, []rlimit, error) {
	var sp spec
	f := os.NewFile(specFD, "sandbox-spec")
	b, err := io.ReadAll(io.LimitReader(f, maxSpec))
	f.Close()
	if err == nil {
		err = json.Unmarshal(b, &sp)
	}
	if err != nil {
		err = fmt.Errorf("reading the sandbox spec: %w", err)
		writeReportOf(Report{Error: err.Error()})
		return Report{}, sp, nil, err
	}
	rep, limits := confine(sp)
	if !rep.Started {
		writeReportOf(rep)
		return rep, sp, nil, errors.New(rep.Error)
	}
	return rep, sp, limits, nil
}

func writeReportOf(r Report) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding the sandbox report: %w", err)
	}
	return writeReport(b)
}

func writeReport(b []byte) error {
	f := os.NewFile(reportFD, "sandbox-report")
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("writing the sandbox report: %w", err)
	}
	return nil
}

// confine applies the spec's policy to this process, in order: descriptors,
// session, dumpability, no_new_privs, Landlock, seccomp; it returns the
// resource limits for the caller to set last, and the report of what is
// applied then (limits included). Started is false when the policy
// requires what is missing, or a step failed in a way that leaves nothing
// sound.
func confine(sp spec) (Report, []rlimit) {
	p := sp.Policy
	rep := Report{Tier: sp.Tier, Network: p.Network, ProxyPort: sp.ProxyPort}
	if sp.Supervised {
		// No PID namespace: the launcher's PID is the server's, as
		// mcpwarden sees it, once it executes it.
		rep.PID = os.Getpid()
	}
	applied := func(c Confinement) { rep.Applied = append(rep.Applied, c) }
	missing := func(c Confinement, why string) { rep.Missing = append(rep.Missing, Missing{c, why}) }
	fail := func(err error) (Report, []rlimit) {
		rep.Error = err.Error()
		return rep, nil
	}

	// Nothing mcpwarden holds open reaches the server.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(fmt.Errorf("closing inherited descriptors on exec: %w", err))
	}
	if sp.Tier == TierNamespaces {
		if os.Getpid() == 1 {
			applied(ConfineUserNamespace)
			applied(ConfinePIDNamespace)
			applied(ConfineNetNamespace)
			applied(ConfineIPCNamespace)
			applied(ConfineMountNamespace)
		} else {
			return fail(errors.New("tier namespaces but the launcher is not PID 1 of a new PID namespace"))
		}
		// The loopback is brought up with CAP_NET_ADMIN, kept like
		// CAP_SYS_ADMIN for the mounts below; both go before Landlock.
		if p.Network == NetworkProxy {
			if err := listenInNamespace(sp.ProxyPort); err != nil {
				return fail(err)
			}
		}
	}
	if p.Network == NetworkProxy && sp.ProxyPort == 0 {
		return fail(errors.New("network proxy but no proxy port in the spec"))
	}
	// A new session has no controlling terminal, so /dev/tty (and TIOCSTI
	// through it) is out of reach. The parent asks for one at start; a
	// launcher started otherwise makes its own. A supervised one stays in
	// its supervisor's, whose process group is what the supervisor kills.
	if !sp.Supervised {
		if _, err := unix.Setsid(); err != nil && !errors.Is(err, unix.EPERM) {
			return fail(fmt.Errorf("starting a new session: %w", err))
		}
	}
	if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		f.Close()
		missing(ConfineSession, "a controlling terminal is still reachable")
	} else {
		applied(ConfineSession)
	}
	applied(ConfineEnvironment)

	limits := limitsFor(sp.Tier, p.Limits.withDefaults())
	// Not dumpable keeps the launcher's memory from other processes of the
	// user until exec; exec resets it, RLIMIT_CORE (set with the limits)
	// stays.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("turning dumpable off: %w", err))
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("setting no_new_privs: %w", err))
	}
	applied(ConfineNoNewPrivs)

	if sp.Tier == TierNamespaces {
		mr, err := setupMounts(p)
		var noMounts *noMountsError
		switch {
		case errors.As(err, &noMounts) && len(p.Hide) > 0:
			missing(ConfineMaskOwnFiles, fmt.Sprintf("%v, so mcpwarden's own files inside a directory it grants (%s) cannot be hidden: "+
				"move them out of the server's workspace and installation, or set sandbox.require: false", noMounts, strings.Join(p.Hide, ", ")))
		case errors.As(err, &noMounts):
			// Without mounts the writable grants stay executable, as
			// in tier landlock: only execve of a written file is denied.
		case err != nil:
			return fail(err)
		default:
			if len(mr.masked) > 0 {
				applied(ConfineMaskOwnFiles)
			}
			applied(ConfineNoExecWritable)
			if len(mr.readOnly) > 0 {
				applied(ConfineReadOnlyOwnFiles)
			}
			rep.Masked, rep.ExecWritable, rep.ReadOnly = mr.masked, mr.execWritable, mr.readOnly
		}
		if err := dropCapabilities(); err != nil {
			return fail(err)
		}
	} else if len(p.Hide) > 0 {
		missing(ConfineMaskOwnFiles, fmt.Sprintf("tier landlock cannot hide mcpwarden's own files inside a directory it grants (%s): "+
			"move them out of the server's workspace and installation, or use tier namespaces, or set sandbox.require: false",
			strings.Join(p.Hide, ", ")))
	}

	ll, err := applyLandlock(sp)
	if err != nil {
		return fail(err)
	}
	rep.LandlockABI = ll.abi
	rep.Applied = append(rep.Applied, ll.applied...)
	rep.Missing = append(rep.Missing, ll.missing...)

	if p.disabled(FeatureSeccomp) {
		missing(ConfineSeccomp, "seccomp disabled by the policy")
	} else if err := applySeccomp(sp); err != nil {
		missing(ConfineSeccomp, err.Error())
	} else {
		applied(ConfineSeccomp)
	}

	applied(ConfineLimits)
	applied(ConfineCoreDumps)
	// The supervisor kills a process group that seccomp keeps every
	// descendant in.
	if sp.Tier == TierNamespaces || (sp.Supervised && rep.Has(ConfineSeccomp)) {
		applied(ConfineDescendants)
	}

	if len(rep.Missing) > 0 && !p.BestEffort {
		return fail(&IncompleteError{Report: rep})
	}
	rep.Started = true
	return rep, limits
}
