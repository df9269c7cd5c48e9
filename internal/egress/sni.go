package egress

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
)

// maxHello bounds the bytes read for a ClientHello: the largest handshake
// message TLS allows, in records.
const maxHello = 1<<16 + 4*(5+256)

var (
	errHelloRead   = errors.New("client hello read")
	errHelloTooBig = errors.New("client hello too long")
)

// readClientHello reads a TLS ClientHello from r with the standard
// library's own parser (a tls.Server that stops once it has the hello) and
// returns its server name ("" when it sends none) and every byte it read,
// which the caller replays to the upstream. Anything that is not a
// ClientHello is an error.
func readClientHello(r io.Reader) (serverName string, raw []byte, err error) {
	hc := &helloConn{r: r}
	got := false
	srv := tls.Server(hc, &tls.Config{
		GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
			serverName, got = chi.ServerName, true
			return nil, errHelloRead
		},
	})
	err = srv.Handshake()
	if !got {
		if err == nil {
			err = errors.New("handshake ended without a ClientHello")
		}
		return "", hc.buf, fmt.Errorf("reading a TLS ClientHello: %w", err)
	}
	return serverName, hc.buf, nil
}

// A helloConn is the connection readClientHello hands the tls.Server: it
// records what is read, up to maxHello bytes, and swallows what is written
// (the alert the server sends when it is stopped).
type helloConn struct {
	r   io.Reader
	buf []byte
}

func (h *helloConn) Read(p []byte) (int, error) {
	room := maxHello - len(h.buf)
	if room <= 0 {
		return 0, errHelloTooBig
	}
	if len(p) > room {
		p = p[:room]
	}
	n, err := h.r.Read(p)
	h.buf = append(h.buf, p[:n]...)
	return n, err
}

func (*helloConn) Write(p []byte) (int, error)      { return len(p), nil }
func (*helloConn) Close() error                     { return nil }
func (*helloConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (*helloConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (*helloConn) SetDeadline(time.Time) error      { return nil }
func (*helloConn) SetReadDeadline(time.Time) error  { return nil }
func (*helloConn) SetWriteDeadline(time.Time) error { return nil }

// tlsAccessDenied is a fatal TLS access_denied alert, sent to a client
// whose ClientHello the proxy refuses, after it has already answered 200
// to the CONNECT.
var tlsAccessDenied = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49}

// checkServerName checks a ClientHello's server name against the host
// decided: a name must be sent for a named host and be that host; for an
// address, none may be sent, or the address itself.
func checkServerName(serverName, host string) error {
	if serverName == "" {
		if _, err := netip.ParseAddr(host); err == nil {
			return nil
		}
		return fmt.Errorf("the TLS ClientHello names no server (SNI); a connection to %s must name it", host)
	}
	if n, ok := hostport.NormalizeHost(serverName); !ok || n != host {
		return fmt.Errorf("the TLS ClientHello names %q (SNI), not %s, the host decided: CONNECT to the host the TLS connection is for", serverName, host)
	}
	return nil
}
