// Package h1 is an http.RoundTripper for plain HTTP/1.1 that writes each
// request, and reads its response, on the goroutine that sends it, over
// kept-alive connections.
//
// net/http's Transport gives every connection a reader and a writer
// goroutine and hands each request and its response across them. For a
// proxy's many small calls to an upstream on the same host or network
// those hand-offs are a measurable part of each call: in mcpwarden's c16
// echo profile (client and proxy together) this transport took the CPU
// of a call from 128–146 to 122–132 µs, and the one-client p50 from
// 0.178–0.198 to 0.163–0.175 ms (see bench/BENCHMARKS.md).
// Hand-written for that measured speed; the wire format stays net/http's
// own: responses are read with http.ReadResponse, and requests written
// byte for byte as (*http.Request).Write writes them (the common ones
// directly, see writeRequest; the others by Request.Write).
//
// A kept connection is checked, before each reuse, for having been closed
// by the server (as a Node server does after 5 s idle), with a peek that
// does not wait: net/http's reader goroutine notices that as it happens,
// and a request is then never written to a closed connection. Where
// there is no such peek (only Linux and macOS have one here), every
// request goes to Fallback.
//
// What it does not do goes to Fallback: https, requests Fallback's Proxy
// sends through a proxy, CONNECT, and requests net/http's Transport
// refuses to send (a header that would split a line, a method that is
// not a token), which Fallback refuses with its own error. Unlike net/http's Transport it does not
// ask for gzip, and it writes a request whole before it reads the answer
// (a server that answers a large body before reading it sees the write
// fail).
package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// DefaultMaxIdleConnsPerHost is the idle connections kept per host when
// Transport.MaxIdleConnsPerHost is zero.
const DefaultMaxIdleConnsPerHost = 8

// max1xxResponses is how many informational responses may come before
// the answer, as in net/http.
const max1xxResponses = 5

// A Transport sends plain HTTP/1.1 requests on the caller's goroutine. Its
// zero value is not usable: Fallback must be set. It is safe for
// concurrent use.
type Transport struct {
	// Fallback sends what this transport does not: every request that is
	// not http://, every one its Proxy sends through a proxy, and CONNECT.
	// Its DialContext, if set, dials this transport's connections too,
	// and its IdleConnTimeout bounds how long they are kept idle.
	Fallback *http.Transport
	// MaxIdleConnsPerHost bounds the idle connections kept per host;
	// zero means DefaultMaxIdleConnsPerHost.
	MaxIdleConnsPerHost int

	mu   sync.Mutex
	idle map[string][]*conn // by host:port, most recently used last
}

// A conn is one connection and its buffers.
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	out    *countingWriter // counts what the exchange wrote
	idleAt time.Time
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// RoundTrip sends req and returns its response, whose body must be read
// to its end for the connection to be kept (as with net/http).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !canPeek || !sendable(req) || req.URL.Scheme != "http" || req.Method == http.MethodConnect || t.proxied(req) {
		return t.Fallback.RoundTrip(req)
	}
	ctx := req.Context()
	addr := hostPort(req)
	c, reused, err := t.get(ctx, addr)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.exchange(c, addr, req)
	var nw nothingWritten
	if err == nil || !reused || !errors.As(err, &nw) || ctx.Err() != nil {
		return resp, err
	}
	// A kept connection the server had closed: nothing reached it, so
	// the request is sent again on a new connection, as net/http does.
	if req, err = rewound(req); err != nil {
		return nil, err
	}
	if c, err = t.dial(ctx, addr); err != nil {
		closeBody(req)
		return nil, err
	}
	return t.exchange(c, addr, req)
}

// sendable reports whether net/http's Transport would send req rather
// than refuse it before dialing: a URL with a host, header and trailer
// names and values that cannot split a line or add one, a method that is
// a token. Request.Write checks none of that itself, so what it would
// refuse goes to Fallback, which fails with net/http's own error
// (TestRefusesWhatNetHTTPRefuses).
func sendable(req *http.Request) bool {
	if req.URL == nil || req.URL.Host == "" || req.Header == nil ||
		req.Method != "" && strings.IndexFunc(req.Method, notToken) >= 0 {
		return false
	}
	return validFields(req.Header) && validFields(req.Trailer)
}

func notToken(r rune) bool { return !httpguts.IsTokenRune(r) }

// validFields reports whether every name and value in h is one
// net/http's Transport sends.
func validFields(h http.Header) bool {
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// proxied reports whether Fallback would send req through a proxy.
func (t *Transport) proxied(req *http.Request) bool {
	if t.Fallback.Proxy == nil {
		return false
	}
	u, err := t.Fallback.Proxy(req)
	return err != nil || u != nil
}

// hostPort is the address req goes to.
func hostPort(req *http.Request) string {
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port)
}

// nothingWritten is a write that failed before any byte of the request
// left.
type nothingWritten struct{ error }

func (e nothingWritten) Unwrap() error { return e.error }

// rewound is req with its body from the start, for sending it again.
func rewound(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("h1: the request's body cannot be sent again")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := *req
	r.Body = body
	return &r, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// aLongTimeAgo is a deadline that has passed: set on a connection, it
// ends the reads and writes in progress on it.
var aLongTimeAgo = time.Unix(1, 0)

// exchange writes req on c and reads the head of its response. The
// connection is ended when req's context is, and closed when the exchange
// fails; the response's body gives c back to the pool once read to its
// end.
func (t *Transport) exchange(c *conn, addr string, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.nc.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	c.out.n = 0
	err := writeRequest(c.bw, req)
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		if c.out.n == 0 {
			err = nothingWritten{err}
		}
		return fail(err)
	}
	for informational := 0; ; informational++ {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return fail(err)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			if informational == max1xxResponses {
				return fail(errors.New("h1: too many 1xx informational responses"))
			}
			continue // the answer follows
		}
		b := &body{rc: resp.Body, t: t, c: c, addr: addr, ctx: ctx, stop: stop, keep: !resp.Close && !req.Close}
		if resp.Body == http.NoBody {
			// Nothing to read (a 202 to a notification): the connection is
			// free now, whether or not the caller reads or closes the body.
			b.release(true)
			return resp, nil
		}
		resp.Body = b
		return resp, nil
	}
}

// A body is a response's body on a connection of the pool: read to its
// end, it gives the connection back; closed before, or failed, it closes
// it.
type body struct {
	rc   io.ReadCloser
	t    *Transport
	c    *conn
	addr string
	ctx  context.Context
	stop func() bool // stops the context's watch of the connection
	keep bool        // whether the connection may serve another request

	mu   sync.Mutex // Close may come from another goroutine than Read
	done bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.release(true)
	case err != nil:
		b.release(false)
		if b.ctx.Err() != nil {
			err = context.Cause(b.ctx)
		}
	}
	return n, err
}

func (b *body) Close() error {
	b.release(false)
	return nil
}

// release ends the exchange: the connection goes back to the pool when the
// body was read whole and nothing stands against its reuse, else it is
// closed.
func (b *body) release(whole bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if whole && b.keep && b.stop() {
		b.t.put(b.addr, b.c)
		return
	}
	b.stop()
	b.c.nc.Close()
}

// get is a kept connection to addr that the server has not closed, or a
// new one; reused says which.
func (t *Transport) get(ctx context.Context, addr string) (c *conn, reused bool, err error) {
	for {
		if c = t.takeIdle(addr); c == nil {
			break
		}
		if (t.Fallback.IdleConnTimeout <= 0 || time.Since(c.idleAt) < t.Fallback.IdleConnTimeout) && open(c.nc) {
			return c, true, nil
		}
		c.nc.Close()
	}
	c, err = t.dial(ctx, addr)
	return c, false, err
}

// dial opens a new connection to addr.
func (t *Transport) dial(ctx context.Context, addr string) (*conn, error) {
	dial := t.Fallback.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("h1: %w", err)
	}
	out := &countingWriter{w: nc}
	return &conn{nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(out), out: out}, nil
}

func (t *Transport) takeIdle(addr string) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	list := t.idle[addr]
	if len(list) == 0 {
		return nil
	}
	c := list[len(list)-1]
	list[len(list)-1] = nil
	t.idle[addr] = list[:len(list)-1]
	return c
}

func (t *Transport) put(addr string, c *conn) {
	if c.br.Buffered() > 0 { // the server sent more than its answer
		c.nc.Close()
		return
	}
	max := t.MaxIdleConnsPerHost
	if max <= 0 {
		max = DefaultMaxIdleConnsPerHost
	}
	c.idleAt = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.idle[addr]) >= max {
		c.nc.Close()
		return
	}
	if t.idle == nil {
		t.idle = map[string][]*conn{}
	}
	t.idle[addr] = append(t.idle[addr], c)
}

// CloseIdleConnections closes the idle connections of this transport and
// of Fallback.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.nc.Close()
		}
	}
	t.Fallback.CloseIdleConnections()
}
