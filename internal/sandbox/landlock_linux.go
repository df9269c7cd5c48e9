package sandbox

import (
	"fmt"
	"os"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The file rights granted. Nothing writable is executable.
const (
	rightsReadExec landlock.AccessFSSet = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
	rightsRead     landlock.AccessFSSet = llsys.AccessFSReadFile | llsys.AccessFSReadDir
	rightsWrite    landlock.AccessFSSet = rightsRead | llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir |
		llsys.AccessFSRemoveFile | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock |
		llsys.AccessFSMakeFifo | llsys.AccessFSMakeSym | llsys.AccessFSTruncate
	rightsDevRW landlock.AccessFSSet = llsys.AccessFSReadFile | llsys.AccessFSWriteFile | llsys.AccessFSTruncate
)

// The devices every server may use.
var (
	devReadWrite = []string{"/dev/null", "/dev/zero", "/dev/full"}
	devRead      = []string{"/dev/random", "/dev/urandom"}
)

type landlockResult struct {
	abi     int
	applied []Confinement
	missing []Missing
}

// landlockABI is the kernel's Landlock ABI version, 0 when it has none or
// the policy disables it.
func landlockABI(p Policy) int {
	if p.disabled(FeatureLandlock) {
		return 0
	}
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// applyLandlock restricts every thread of the process to the policy's
// files, TCP ports and scopes, with the best ABI the kernel has. What the
// ABI lacks is reported missing, not silently dropped.
func applyLandlock(sp spec) (landlockResult, error) {
	p := sp.Policy
	res := landlockResult{abi: landlockABI(p)}
	if res.abi < 1 {
		why := "the kernel has no Landlock"
		if p.disabled(FeatureLandlock) {
			why = "Landlock disabled by the policy"
		}
		for _, c := range []Confinement{ConfineLandlockFS, ConfineLandlockNet, ConfineScopeSignal, ConfineScopeAbstract} {
			res.missing = append(res.missing, Missing{c, why})
		}
		return res, nil
	}
	cfg := landlock.Config{HandledAccessFS: fsRightsFor(res.abi)}
	res.applied = append(res.applied, ConfineLandlockFS)
	if p.Network != NetworkHost {
		switch {
		case p.disabled(FeatureLandlockNet):
			res.missing = append(res.missing, Missing{ConfineLandlockNet, "Landlock TCP rules disabled by the policy"})
		case res.abi < 4:
			why := fmt.Sprintf("Landlock ABI %d has no TCP rules (4 has)", res.abi)
			if p.Network == NetworkProxy && sp.Tier == TierLandlock {
				why += "; network: proxy in tier landlock needs them to keep the server to its proxy's port: write network: none, or use tier namespaces"
			}
			res.missing = append(res.missing, Missing{ConfineLandlockNet, why})
		default:
			cfg.HandledAccessNet = llsys.AccessNetBindTCP | llsys.AccessNetConnectTCP
			if res.abi >= 10 {
				cfg.HandledAccessNet |= llsys.AccessNetBindUDP | llsys.AccessNetConnectSendUDP
			}
			res.applied = append(res.applied, ConfineLandlockNet)
		}
	}
	switch {
	case p.disabled(FeatureLandlockScope):
		res.missing = append(res.missing,
			Missing{ConfineScopeSignal, "Landlock scoping disabled by the policy"},
			Missing{ConfineScopeAbstract, "Landlock scoping disabled by the policy"})
	case res.abi < 6:
		why := fmt.Sprintf("Landlock ABI %d has no scoping (6 has)", res.abi)
		res.missing = append(res.missing, Missing{ConfineScopeSignal, why}, Missing{ConfineScopeAbstract, why})
	default:
		cfg.Scoped = llsys.ScopeSignal | llsys.ScopeAbstractUnixSocket
		res.applied = append(res.applied, ConfineScopeSignal, ConfineScopeAbstract)
	}

	var rules []landlock.Rule
	if p.Network == NetworkProxy && cfg.HandledAccessNet != 0 {
		// Connect to the proxy's port on any address (Landlock rules name
		// ports, not addresses); bind nothing.
		rules = append(rules, landlock.ConnectTCP(sp.ProxyPort))
	}
	rules = append(rules, pathRules(rightsReadExec, append(append([]string{}, SystemExec...), p.Exec...))...)
	rules = append(rules, pathRules(rightsRead, append(append([]string{}, SystemRead...), p.Read...))...)
	rules = append(rules,
		landlock.PathAccess(rightsDevRW&cfg.HandledAccessFS, existing(devReadWrite)...),
		landlock.PathAccess(llsys.AccessFSReadFile, existing(devRead)...),
	)
	var writable []string
	for _, d := range append([]string{p.Home, p.TmpDir}, p.Write...) {
		if d != "" {
			writable = append(writable, d)
		}
	}
	if len(writable) > 0 {
		w := landlock.PathAccess(rightsWrite&cfg.HandledAccessFS, writable...)
		if res.abi >= 2 {
			w = w.WithRefer()
		}
		rules = append(rules, w)
	}
	if res.abi < 8 && os.Getpid() == 1 && !allThreadsSyscalls() {
		// Below ABI 8 go-landlock reaches every thread through libpsx,
		// which (in a cgo build) finds threads in /proc/<pid>/task: in a
		// new PID namespace that is another process's, and it waits
		// forever. Restrict this thread, the one that executes the server
		// (Main locked it); the launcher's other threads end at exec.
		fd, _, err := cfg.NewRulesetFD(rules...)
		if err != nil {
			return res, fmt.Errorf("making the Landlock ruleset (ABI %d): %w", res.abi, err)
		}
		defer unix.Close(fd)
		if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
			return res, fmt.Errorf("applying Landlock (ABI %d) to the launching thread: %w", res.abi, err)
		}
		return res, nil
	}
	if err := cfg.Restrict(rules...); err != nil {
		return res, fmt.Errorf("applying Landlock (ABI %d): %w", res.abi, err)
	}
	return res, nil
}

// allThreadsSyscalls reports whether the Go runtime can make a system call
// on every thread itself, which it cannot in a cgo build.
func allThreadsSyscalls() bool {
	_, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0)
	return errno != syscall.ENOTSUP
}

// fsRightsFor is every file right the ABI knows, so that each is denied
// unless a rule grants it.
func fsRightsFor(abi int) landlock.AccessFSSet {
	all := landlock.AccessFSSet(llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile |
		llsys.AccessFSReadDir | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeChar |
		llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo |
		llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym)
	if abi >= 2 {
		all |= llsys.AccessFSRefer
	}
	if abi >= 3 {
		all |= llsys.AccessFSTruncate
	}
	if abi >= 5 {
		all |= llsys.AccessFSIoctlDev
	}
	if abi >= 9 {
		all |= llsys.AccessFSResolveUnix
	}
	return all
}

// pathRules grants rights on the paths that exist: all of them on
// directories, the file rights alone on files (the kernel refuses
// directory rights on a file).
func pathRules(rights landlock.AccessFSSet, paths []string) []landlock.Rule {
	var dirs, files []string
	for _, p := range existing(paths) {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		} else {
			files = append(files, p)
		}
	}
	return []landlock.Rule{
		landlock.PathAccess(rights, dirs...),
		landlock.PathAccess(rights&(llsys.AccessFSExecute|llsys.AccessFSReadFile), files...),
	}
}

// existing keeps the paths that exist: a rule on a missing path is an
// error, and a missing system directory grants nothing anyway.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
