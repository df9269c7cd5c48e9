package sandbox

import (
	"errors"
	"fmt"
	"math/bits"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The actions of the filter: most calls fail with EPERM; clone3 fails with
// ENOSYS, which makes libc fall back to clone, whose flags can be read, and
// so does a memfd_create that could be executed.
const (
	actionEPERM  = seccomp.ActionErrno | seccomp.Action(unix.EPERM)
	actionENOSYS = seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)
)

// deniedCalls fail in every tier: no way to inspect or change another
// process, the kernel's keyrings, BPF, io_uring (which would bypass this
// filter), mounts outside the launcher's set-up, new namespaces, modules.
var deniedCalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
	"fsmount", "fspick", "mount_setattr",
	"unshare", "setns",
	"open_by_handle_at", "name_to_handle_at",
	"swapon", "swapoff", "reboot", "acct", "quotactl", "syslog", "vhangup", "uselib",
	"lookup_dcookie", "personality",
}

// The namespace flags of clone.
const cloneNewNS = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// lo32Equal matches an argument whose low 32 bits are v, whatever its high
// bits: the kernel reads int and unsigned int arguments (socket family,
// ioctl command) from the low half only, and the library's Equal compares
// all 64 bits, so an attacker setting a high bit would slip past it.
func lo32Equal(arg uint32, v uint32) seccomp.ArgumentConditions {
	conds := seccomp.ArgumentConditions{{Argument: arg, Operation: seccomp.BitsNotSet, Value: uint64(^v)}}
	for x := v; x != 0; x &= x - 1 {
		conds = append(conds, seccomp.Condition{Argument: arg, Operation: seccomp.BitsSet, Value: uint64(1) << bits.TrailingZeros32(x)})
	}
	return conds
}

// socketRules are the socket calls denied. Unless the network is host, an
// inet socket is TCP only (Landlock decides where it may connect); UDP,
// raw, packet, MPTCP and every other family are denied. Unix sockets other
// than socketpair are denied unless the policy allows them.
func socketRules(p Policy) []seccomp.ArgumentConditions {
	var sets []seccomp.ArgumentConditions
	if !p.UnixSockets {
		sets = append(sets, lo32Equal(0, unix.AF_UNIX))
	}
	if p.Network == NetworkHost {
		return sets
	}
	// Any family but unix and inet. NotEqual compares 64 bits, so a family
	// with high bits set is denied here too.
	sets = append(sets, seccomp.ArgumentConditions{
		{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX},
		{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET},
		{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET6},
	})
	for _, fam := range []uint32{unix.AF_INET, unix.AF_INET6} {
		// The type's low nibble is not SOCK_STREAM (1): some of 0xe set, or
		// 0x1 clear.
		sets = append(sets,
			append(lo32Equal(0, fam), seccomp.Condition{Argument: 1, Operation: seccomp.BitsSet, Value: 0xe}),
			append(lo32Equal(0, fam), seccomp.Condition{Argument: 1, Operation: seccomp.BitsNotSet, Value: 0x1}),
			// The protocol is neither 0 nor TCP: MPTCP (262) and the rest.
			append(lo32Equal(0, fam),
				seccomp.Condition{Argument: 2, Operation: seccomp.NotEqual, Value: 0},
				seccomp.Condition{Argument: 2, Operation: seccomp.NotEqual, Value: unix.IPPROTO_TCP}),
		)
	}
	return sets
}

// filterPolicy is the seccomp policy for p in tier t.
func filterPolicy(p Policy, t Tier) seccomp.Policy {
	var named []seccomp.NameWithConditions
	add := func(name string, sets ...seccomp.ArgumentConditions) {
		// Entries of one name are OR'd together by the library.
		for _, set := range sets {
			named = append(named, seccomp.NameWithConditions{Name: name, Conditions: set})
		}
	}
	add("ioctl", lo32Equal(1, unix.TIOCSTI), lo32Equal(1, unix.TIOCLINUX))
	add("clone", seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNewNS}})
	add("socket", socketRules(p)...)
	denied := append([]string{}, deniedCalls...)
	if t == TierLandlock {
		// Without a PID namespace the process group is what is killed
		// when the server stops; nothing may leave it.
		denied = append(denied, "setsid", "setpgid")
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: actionENOSYS, Names: []string{"clone3"}, NamesWithCondtions: []seccomp.NameWithConditions{
				// A memory file is on no mount, so no noexec mount and no
				// Landlock rule stops its execution: only one sealed
				// against it may be made (ENOSYS sends a program to its
				// fallback, a file in TMPDIR say).
				{Name: "memfd_create", Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.BitsNotSet, Value: unix.MFD_NOEXEC_SEAL}}},
			}},
			{Action: actionEPERM, Names: denied, NamesWithCondtions: named},
		},
	}
}

// applySeccomp loads an architecture guard and the policy's filter on every
// thread. The library sends system calls of another architecture (i386
// through int 0x80 on amd64) to the default action, allow, so the guard
// kills a process that makes one.
func applySeccomp(sp spec) error {
	if err := loadArchGuard(); err != nil {
		return err
	}
	f := seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: filterPolicy(sp.Policy, sp.Tier)}
	if err := seccomp.LoadFilter(f); err != nil {
		return fmt.Errorf("loading the seccomp filter: %w", err)
	}
	return nil
}

func loadArchGuard() error {
	if nativeArch == 0 {
		return errors.New("no architecture guard for this GOARCH")
	}
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nativeArch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	})
	if err != nil {
		return fmt.Errorf("assembling the architecture guard: %w", err)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("loading the architecture guard: %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("loading the architecture guard: thread %d could not be synchronised", r)
	}
	return nil
}
