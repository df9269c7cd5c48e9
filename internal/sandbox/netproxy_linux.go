package sandbox

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// namespaceProxyPort is the egress proxy's port on the loopback of a
// server's own network namespace, where nothing else listens; a fixed
// port keeps the server's environment the same from start to start.
const namespaceProxyPort = 3128

// prepareProxy readies the egress proxy's listener of a server with
// NetworkProxy about to start in tier: in TierLandlock mcpwarden listens on
// an ephemeral port of 127.0.0.1 itself, the one port Landlock will let the
// server connect to; in TierNamespaces the launcher will listen inside the
// server's network namespace, and prepareProxy returns the end of a unix
// socket pair on which the launcher sends that listener back (its fd 5).
// Either way the server's environment names the port.
func (c *Cmd) prepareProxy(tier Tier) (*os.File, error) {
	if c.sp.Policy.Network != NetworkProxy {
		return nil, nil
	}
	var launcherEnd *os.File
	switch tier {
	case TierLandlock:
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("sandbox: listening for the egress proxy: %w", err)
		}
		c.proxy = l
		c.sp.ProxyPort = uint16(l.Addr().(*net.TCPAddr).Port)
	case TierNamespaces:
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("sandbox: the socket pair for the egress proxy's listener: %w", err)
		}
		c.proxySock = os.NewFile(uintptr(fds[0]), "egress-listener")
		launcherEnd = os.NewFile(uintptr(fds[1]), "egress-listener-launcher")
		c.sp.ProxyPort = namespaceProxyPort
	default:
		return nil, fmt.Errorf("sandbox: no egress proxy for tier %s", tier)
	}
	c.sp.Env = withEnv(c.sp.Env, proxyEnv(c.sp.ProxyPort)...)
	return launcherEnd, nil
}

// receiveListener takes the listener the launcher sent, once its report
// says it started the server (it sends the listener before it writes the
// report, so it is waiting on the socket by then).
func (c *Cmd) receiveListener() error {
	if c.proxySock == nil {
		return nil
	}
	defer func() {
		c.proxySock.Close()
		c.proxySock = nil
	}()
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(c.proxySock.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return fmt.Errorf("sandbox: the launcher sent no egress listener: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return fmt.Errorf("sandbox: the launcher's egress listener message is malformed (%d messages): %v", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return fmt.Errorf("sandbox: the launcher's egress listener message carries %d descriptors: %v", len(fds), err)
	}
	f := os.NewFile(uintptr(fds[0]), "egress-listener")
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return fmt.Errorf("sandbox: the launcher's egress listener: %w", err)
	}
	c.proxy = l
	return nil
}

// ProxyListener hands over the listener on which the server's egress
// proxy connections arrive, once [Cmd.Report] has said the server started
// with NetworkProxy; the caller serves the proxy on it and closes it when
// the server has exited. In TierNamespaces it is a socket of the server's
// network namespace, so what it accepts comes from inside the sandbox
// only. nil for any other network, and after the first call.
func (c *Cmd) ProxyListener() net.Listener {
	l := c.proxy
	c.proxy = nil
	return l
}

// closeProxy closes what prepareProxy readied, for a server that did not
// start.
func (c *Cmd) closeProxy() {
	if c.proxy != nil {
		c.proxy.Close()
		c.proxy = nil
	}
	if c.proxySock != nil {
		c.proxySock.Close()
		c.proxySock = nil
	}
}

// listenInNamespace is the launcher's part in TierNamespaces: it brings the
// namespace's loopback up, listens on 127.0.0.1:port there and sends the
// listening socket to the parent on listenerFD, then closes both, so the
// server holds neither: connections accepted on it stay in this
// namespace, and mcpwarden accepts them from outside.
func listenInNamespace(port uint16) error {
	defer unix.Close(listenerFD)
	if err := loopbackUp(); err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("egress listener: socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("egress listener: binding 127.0.0.1:%d: %w", port, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		return fmt.Errorf("egress listener: listen: %w", err)
	}
	if err := unix.Sendmsg(listenerFD, []byte{1}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("egress listener: sending it to mcpwarden: %w", err)
	}
	return nil
}

// loopbackUp brings up lo, down in a new network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bringing lo up: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: reading its flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}
