package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// forward carries one absolute-form HTTP request: it dials a checked
// address, sends the request in origin form (see outbound), and writes the
// response back with its hop-by-hop headers removed and Connection: close.
// One request per client connection keeps every request decided alone.
// lim is the reader under the head's reader; the body is read through it.
func (p *Proxy) forward(ctx context.Context, c net.Conn, lim *limitReader, h head, addrs []netip.Addr, rep *Report) {
	in := h.http
	expect := in.Header.Values("Expect")
	if len(expect) > 1 || len(expect) == 1 && !strings.EqualFold(strings.TrimSpace(expect[0]), "100-continue") {
		rep.Outcome, rep.Err = BadRequest, fmt.Errorf("expectation %q", expect)
		respond(c, http.StatusExpectationFailed, "only Expect: 100-continue is understood")
		return
	}
	up, ap, err := p.dial(ctx, addrs, h.req.Port)
	rep.Addr = ap
	if err != nil {
		rep.Outcome, rep.Err = DialFailed, err
		respond(c, http.StatusBadGateway, fmt.Sprintf("connection to %s: %v", h.req, err))
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { _ = up.Close() })
	defer stop()
	rep.Outcome = Carried

	upc := &idleConn{Conn: up, idle: p.opts.IdleTimeout}
	cc := &idleConn{Conn: c, idle: p.opts.IdleTimeout}
	lim.r = cc // the body, read through br, renews the client's deadline too
	defer func() { rep.Sent, rep.Received = upc.written, upc.read }()
	if len(expect) == 1 {
		if _, err := io.WriteString(cc, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			rep.Err = fmt.Errorf("answering Expect: %w", err)
			return
		}
	}
	out := outbound(h)
	if err := out.Write(upc); err != nil {
		rep.Err = fmt.Errorf("sending the request to %s: %w", ap, err)
		respond(c, http.StatusBadGateway, fmt.Sprintf("sending the request to %s: %v", h.req, err))
		return
	}
	ulim := &limitReader{r: upc}
	ubr := bufio.NewReader(ulim)
	for {
		ulim.n = int64(p.opts.MaxHeaderBytes) * 64
		resp, err := http.ReadResponse(ubr, out)
		if err != nil {
			rep.Err = fmt.Errorf("reading the response from %s: %w", ap, err)
			respond(c, http.StatusBadGateway, fmt.Sprintf("reading the response from %s: %v", h.req, err))
			return
		}
		ulim.n = unlimited
		if resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Body.Close()
			rep.Err = fmt.Errorf("%s switched protocols unasked", ap)
			respond(c, http.StatusBadGateway, "the upstream switched protocols, which was not asked for")
			return
		}
		removeHopHeaders(resp.Header)
		informational := resp.StatusCode < 200 // 103 Early Hints and the like
		resp.Close = !informational
		err = resp.Write(cc)
		resp.Body.Close()
		if err != nil {
			rep.Err = fmt.Errorf("relaying the response of %s: %w", ap, err)
			return
		}
		if !informational {
			return
		}
	}
}

// An idleConn renews its deadline to idle from now whenever it is read or
// written (at most every idle/8), and counts the bytes. It is used by one
// goroutine at a time.
type idleConn struct {
	net.Conn
	idle          time.Duration
	renewed       time.Time
	read, written int64
}

func (c *idleConn) renew() {
	if now := time.Now(); now.Sub(c.renewed) > c.idle/8 {
		_ = c.Conn.SetDeadline(now.Add(c.idle))
		c.renewed = now
	}
}

func (c *idleConn) Read(p []byte) (int, error) {
	c.renew()
	n, err := c.Conn.Read(p)
	c.read += int64(n)
	return n, err
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.renew()
	n, err := c.Conn.Write(p)
	c.written += int64(n)
	return n, err
}
