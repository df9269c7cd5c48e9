package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// The floors are the least a proxy can do on each transport, measured
// beside mcpwarden so that its cost is read against what any proxy costs:
// a relay that copies stdio bytes to and from a child, a relay that decodes
// and re-encodes every JSON-RPC message on the way (the least a proxy that
// reads arguments must do), and a bare httputil.ReverseProxy. They are
// subcommands of the bench binary itself, built from this package.

// A relayMode is what the relay does to each message it passes on.
type relayMode string

// The relay modes.
const (
	relayBytes  relayMode = "bytes"  // copy the bytes as they come
	relayDecode relayMode = "decode" // decode each line into Go values and encode it again
)

// runRelay is the "relay" subcommand: `relay -mode bytes|decode -- COMMAND
// ARGS...` starts COMMAND and relays its stdio until the relay's stdin
// ends, then closes the child's stdin and waits for it.
func runRelay(args []string) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	mode := fs.String("mode", string(relayBytes), "`bytes` (copy) or decode (decode and re-encode each JSON-RPC message)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m := relayMode(*mode)
	if m != relayBytes && m != relayDecode {
		return fmt.Errorf("relay: unknown mode %q", *mode)
	}
	if fs.NArg() == 0 {
		return errors.New("relay: no command to relay to")
	}
	// No signal handling: SIGTERM ends the relay at once, and the child
	// then reads the end of its stdin and exits by itself.
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 2 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("relay: starting %q: %w", fs.Arg(0), err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = relay(m, os.Stdout, out)
	})
	_ = relay(m, in, os.Stdin)
	in.Close()
	wg.Wait()
	return cmd.Wait()
}

// relay passes src on to dst until src ends: byte for byte, or one decoded
// and re-encoded JSON line at a time.
func relay(m relayMode, dst io.Writer, src io.Reader) error {
	if m == relayBytes {
		_, err := io.Copy(dst, src)
		return err
	}
	r := bufio.NewReaderSize(src, 64<<10)
	w := bufio.NewWriterSize(dst, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if werr := reencode(w, line); werr != nil {
				return werr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// reencode decodes line into Go values, as a proxy that reads a request's
// arguments (or a result's content) must, encodes it again and writes it
// as one line. A line that is not JSON is passed on as it is.
func reencode(w *bufio.Writer, line []byte) error {
	var msg map[string]any
	if err := json.Unmarshal(line, &msg); err != nil {
		if _, err := w.Write(line); err != nil {
			return err
		}
		return w.Flush()
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return err
	}
	return w.Flush()
}

// runReverseProxy is the "rproxy" subcommand: `rproxy -listen ADDR -to
// URL` serves a bare httputil.ReverseProxy to URL's host at ADDR, with as
// many idle connections to it as the benchmark's clients keep, until
// SIGTERM or SIGINT.
func runReverseProxy(args []string) error {
	fs := flag.NewFlagSet("rproxy", flag.ContinueOnError)
	listen := fs.String("listen", "", "`ADDR` to serve at")
	to := fs.String("to", "", "`URL` of the upstream (scheme and host are used)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*to)
	if err != nil || u.Host == "" {
		return fmt.Errorf("rproxy: -to %q is not an http URL", *to)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	return serveUntilDone(ctx, ln, newReverseProxy(u))
}

// newReverseProxy is the bare reverse proxy to u's host.
func newReverseProxy(u *url.URL) *httputil.ReverseProxy {
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	rp.FlushInterval = -1 // streamable HTTP answers may be event streams
	return rp
}

// openFloors opens the floor routes: each relay in front of the bench
// upstream and of server-everything over stdio, and the reverse proxy in
// front of the bench upstream over HTTP.
func (b *bench) openFloors(ctx context.Context) {
	for _, f := range []struct {
		route string
		mode  relayMode
	}{{routeByteRelay, relayBytes}, {routeDecodeRelay, relayDecode}} {
		relay := []string{"relay", "-mode", string(f.mode), "--"}
		b.openStdio(ctx, f.route, 0, benchWorkloads, upstreamTool, b.self, append(relay, b.self, "upstream")...)
		b.openStdio(ctx, f.route, 0, []workload{workloadEvr}, upstreamTool, b.self, append(relay, "node", b.everyJS, "stdio")...)
	}
	if err := b.openReverseProxy(ctx); err != nil {
		b.logf("%s: %v", routeReverseProxy, err)
		b.notRun(routeReverseProxy, 0, benchWorkloads, err.Error())
	}
}

func (b *bench) openReverseProxy(ctx context.Context) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	p, err := b.start("rproxy", nil, b.self, "rproxy", "-listen", addr, "-to", b.httpUpURL)
	if err != nil {
		return err
	}
	url := "http://" + addr + "/mcp"
	if err := waitInitialize(ctx, p, url, 20*time.Second); err != nil {
		return err
	}
	b.openHTTP(ctx, routeReverseProxy, 0, benchWorkloads, upstreamTool, url, p.PID())
	return nil
}
