package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// handle carries one client connection: it reads the head, has it
// decided, resolves and checks the addresses, and tunnels or forwards.
func (p *Proxy) handle(ctx context.Context, c net.Conn) {
	rep := Report{Start: time.Now()}
	defer func() {
		rep.Duration = time.Since(rep.Start)
		if p.opts.Report != nil {
			p.opts.Report(rep)
		}
	}()
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()

	lim := &limitReader{r: c, n: int64(p.opts.MaxHeaderBytes)}
	br := bufio.NewReader(lim)
	_ = c.SetReadDeadline(time.Now().Add(p.opts.HeadTimeout))
	h, err := readHead(br)
	if err != nil {
		rep.Outcome, rep.Err = BadRequest, err
		var he *headError
		switch {
		case lim.n <= 0:
			respond(c, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("the request head is longer than %d bytes", p.opts.MaxHeaderBytes))
		case errors.As(err, &he):
			respond(c, he.status, he.msg)
		}
		return
	}
	lim.n = unlimited
	_ = c.SetReadDeadline(time.Time{})
	rep.Kind, rep.Request = h.kind, h.req

	v := Verdict{Reason: "no decider is configured"}
	if p.decider != nil {
		v = p.decider.Decide(ctx, h.req)
	}
	rep.Verdict = v
	if err := ctx.Err(); err != nil {
		rep.Outcome, rep.Err = Refused, fmt.Errorf("deciding %s: %w", h.req, err)
		return
	}
	if v.Decision != Allow {
		rep.Outcome, rep.Err = Refused, fmt.Errorf("%s refused: %s", h.req, v.Reason)
		respond(c, http.StatusForbidden, fmt.Sprintf("connection to %s refused: %s", h.req, v.Reason))
		return
	}
	addrs, err := p.resolve(ctx, h.req)
	if err != nil {
		rep.Outcome, rep.Err = AddressRefused, err
		status := http.StatusBadGateway
		if ae := (*AddressError)(nil); errors.As(err, &ae) {
			status = http.StatusForbidden
		}
		respond(c, status, fmt.Sprintf("connection to %s refused: %v", h.req, err))
		return
	}
	switch h.kind {
	case KindTunnel:
		p.tunnel(ctx, c, br, h.req, addrs, &rep)
	case KindForward:
		p.forward(ctx, c, lim, h, addrs, &rep)
	}
}

// tunnel carries a CONNECT. On a TLS port it answers 200, reads the
// ClientHello and checks its server name before dialling, then replays it;
// elsewhere it dials first, so that a failure can still be answered.
func (p *Proxy) tunnel(ctx context.Context, c net.Conn, br *bufio.Reader, r Request, addrs []netip.Addr, rep *Report) {
	var hello []byte
	if p.isTLSPort(r.Port) {
		if _, err := io.WriteString(c, established); err != nil {
			rep.Outcome, rep.Err = TLSRefused, fmt.Errorf("answering the CONNECT: %w", err)
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(p.opts.HeadTimeout))
		name, raw, err := readClientHello(br)
		if err == nil {
			err = checkServerName(name, r.Host)
		}
		if err != nil {
			rep.Outcome, rep.Err = TLSRefused, err
			_, _ = c.Write(tlsAccessDenied)
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		hello = raw
	}
	up, ap, err := p.dial(ctx, addrs, r.Port)
	rep.Addr = ap
	if err != nil {
		rep.Outcome, rep.Err = DialFailed, err
		if hello == nil {
			respond(c, http.StatusBadGateway, fmt.Sprintf("connection to %s: %v", r, err))
		}
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { _ = up.Close() })
	defer stop()
	if hello == nil {
		if _, err := io.WriteString(c, established); err != nil {
			rep.Outcome, rep.Err = Carried, fmt.Errorf("answering the CONNECT: %w", err)
			return
		}
	}
	rep.Outcome = Carried
	// Bytes the client sent before the tunnel was up: the ClientHello and
	// whatever the reader holds beyond it.
	early := hello
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		early = append(early, b...)
	}
	if len(early) > 0 {
		n, err := up.Write(early)
		rep.Sent += int64(n)
		if err != nil {
			rep.Err = fmt.Errorf("sending to %s: %w", ap, err)
			return
		}
	}
	sent, received, err := p.relay(ctx, c, up)
	rep.Sent += sent
	rep.Received += received
	rep.Err = err
}

// established answers a CONNECT that goes ahead.
const established = "HTTP/1.1 200 Connection established\r\n\r\n"

// errIdle ends a tunnel on which nothing moved for IdleTimeout.
var errIdle = errors.New("idle for too long")

// relay copies both ways between client and up until both directions have
// ended, half-closing each side as its source ends. It returns the bytes
// sent (client to up) and received, and the first error.
func (p *Proxy) relay(ctx context.Context, client, up net.Conn) (sent, received int64, err error) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	type result struct {
		n   int64
		err error
	}
	upward := make(chan result, 1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		n, err := p.pipe(up, client, &last)
		if err != nil {
			_ = client.Close()
			_ = up.Close()
		} else {
			closeWrite(up)
		}
		upward <- result{n, err}
	}()
	received, err = p.pipe(client, up, &last)
	if err != nil {
		_ = client.Close()
		_ = up.Close()
	} else {
		closeWrite(client)
	}
	u := <-upward
	err = cause(err, u.err)
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
		err = fmt.Errorf("ended: %w", ctxErr)
	}
	return u.n, received, err
}

// pipe copies src to dst until src ends, with io.Copy (splice(2) between
// sockets on Linux). Reads time out every quarter of IdleTimeout so that
// last (when anything last moved either way) can be checked; the pipe
// ends with errIdle when nothing has moved for IdleTimeout. Writes time
// out after IdleTimeout: a write that stalls that long ends the pipe too.
func (p *Proxy) pipe(dst, src net.Conn, last *atomic.Int64) (int64, error) {
	idle := p.opts.IdleTimeout
	var total int64
	for {
		start := time.Now()
		_ = src.SetReadDeadline(start.Add(idle / 4))
		_ = dst.SetWriteDeadline(start.Add(idle))
		n, err := io.Copy(dst, src)
		total += n
		now := time.Now()
		if n > 0 {
			last.Store(now.UnixNano())
		}
		if err == nil {
			return total, nil
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return total, err
		}
		if now.Sub(start) >= idle || now.Sub(time.Unix(0, last.Load())) >= idle {
			return total, errIdle // a stalled write, or nothing either way
		}
	}
}

// cause returns the first of errs that is not the net.ErrClosed of a
// connection closed because the other direction failed, else the first
// that is not nil.
func cause(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// closeWrite half-closes c, when it can, so that its peer reads EOF.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// respond writes a complete plain-text answer and ends the connection
// gently: it half-closes and drains what the client still sends for a
// moment, so that the answer is not lost to a reset.
func respond(c net.Conn, status int, msg string) {
	body := "mcpwarden egress: " + strings.ReplaceAll(msg, "\r", "") + "\n"
	var b strings.Builder
	b.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	b.WriteString("Connection: close\r\n\r\n")
	b.WriteString(body)
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, b.String()); err != nil {
		return
	}
	closeWrite(c)
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, _ = io.CopyN(io.Discard, c, 64<<10)
}

// A limitReader reads at most n more bytes from r; the proxy bounds a
// request head with it and lifts the bound (n = unlimited) once the head
// is read.
type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
