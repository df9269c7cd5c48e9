package sandbox

import (
	"encoding/binary"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

func TestFilterPolicyAssemblesForEveryNetworkAndTier(t *testing.T) {
	t.Parallel()
	for _, n := range []Network{NetworkNone, NetworkHost} {
		for _, tier := range []Tier{TierNamespaces, TierLandlock} {
			for _, unixOK := range []bool{false, true} {
				p := filterPolicy(Policy{Network: n, UnixSockets: unixOK}, tier)
				if _, err := p.Assemble(); err != nil {
					t.Errorf("network %s, tier %s, unix %v: %v", n, tier, unixOK, err)
				}
			}
		}
	}
}

// decide runs the assembled filter on one system call, as the kernel would.
func decide(t *testing.T, p seccomp.Policy, nr uintptr, args ...uint64) uint32 {
	t.Helper()
	insts, err := p.Assemble()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	// struct seccomp_data, each 32-bit word big-endian: the VM loads
	// words as from a network packet, the kernel in the machine's order.
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr))
	binary.BigEndian.PutUint32(data[4:], nativeArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))     // low half first (little-endian machine)
		binary.BigEndian.PutUint32(data[20+8*i:], uint32(a>>32)) // then the high half
	}
	got, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(got)
}

func TestFilterDecidesEachCallAsTheKernelReadsIt(t *testing.T) {
	t.Parallel()
	const (
		allow = uint32(unix.SECCOMP_RET_ALLOW)
		eperm = uint32(actionEPERM)
		high  = uint64(1) << 32
	)
	none := filterPolicy(Policy{}, TierLandlock)
	host := filterPolicy(Policy{Network: NetworkHost}, TierNamespaces)
	tests := []struct {
		name string
		p    seccomp.Policy
		nr   uintptr
		args []uint64
		want uint32
	}{
		{"TCP is allowed (Landlock decides where)", none, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0}, allow},
		{"TCP over IPv6 with IPPROTO_TCP is allowed", none, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP}, allow},
		{"UDP is denied", none, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_DGRAM, 0}, eperm},
		{"UDP with flags is denied", none, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, 0}, eperm},
		{"UDP with a high bit in the family is denied", none, unix.SYS_SOCKET, []uint64{high | unix.AF_INET, unix.SOCK_DGRAM, 0}, eperm},
		{"TCP with a high bit in the family is denied", none, unix.SYS_SOCKET, []uint64{high | unix.AF_INET, unix.SOCK_STREAM, 0}, eperm},
		{"raw is denied", none, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, eperm},
		{"SEQPACKET is denied", none, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_SEQPACKET, 0}, eperm},
		{"MPTCP is denied", none, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM, 262}, eperm},
		{"packet is denied", none, unix.SYS_SOCKET, []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, eperm},
		{"netlink is denied", none, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, 0}, eperm},
		{"unix is denied by default", none, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, eperm},
		{"unix with a high bit is denied", host, unix.SYS_SOCKET, []uint64{high | unix.AF_UNIX, unix.SOCK_STREAM, 0}, eperm},
		{"socketpair stays allowed", none, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, allow},
		{"UDP is allowed with network host", host, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_DGRAM, 0}, allow},
		{"TIOCSTI is denied", none, unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI, 0}, eperm},
		{"TIOCSTI with a high bit is denied", none, unix.SYS_IOCTL, []uint64{0, high | unix.TIOCSTI, 0}, eperm},
		{"TIOCLINUX is denied", none, unix.SYS_IOCTL, []uint64{0, unix.TIOCLINUX, 0}, eperm},
		{"a request sharing TIOCSTI's bits is allowed", none, unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI | 0x1, 0}, allow},
		{"TCGETS is allowed", none, unix.SYS_IOCTL, []uint64{0, unix.TCGETS, 0}, allow},
		{"a thread is allowed", none, unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_THREAD, 0}, allow},
		{"a new user namespace is denied", none, unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER, 0}, eperm},
		{"clone3 is ENOSYS", none, unix.SYS_CLONE3, nil, uint32(actionENOSYS)},
		{"ptrace is denied", host, unix.SYS_PTRACE, nil, eperm},
		{"setsid is denied in tier landlock", none, unix.SYS_SETSID, nil, eperm},
		{"setsid is allowed in tier namespaces", host, unix.SYS_SETSID, nil, allow},
		{"read is allowed", none, unix.SYS_READ, nil, allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := decide(t, tt.p, tt.nr, tt.args...); got != tt.want {
				t.Errorf("got %#x, want %#x", got, tt.want)
			}
		})
	}
}
