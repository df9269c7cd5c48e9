//go:build unix

package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// downloadSize is what one download carries.
const downloadSize = 100 << 20

// sourceOutside serves, on 127.0.0.2, downloadSize bytes to every
// connection after the client's first byte (so that a tunnel's set-up is
// not timed as throughput) or, when that begins a TLS record, after the
// whole record (a ClientHello), and returns its port.
func sourceOutside(b *testing.B) uint16 {
	l := outsideListener(b, "127.0.0.2")
	chunk := make([]byte, 1<<20)
	testkit.ServeConns(b, l, func(c net.Conn) {
		head := make([]byte, 5)
		if _, err := io.ReadFull(c, head[:1]); err != nil {
			return
		}
		if head[0] == 0x16 { // a TLS handshake record: read it all
			if _, err := io.ReadFull(c, head[1:]); err != nil {
				return
			}
			rest := int64(binary.BigEndian.Uint16(head[3:]))
			if _, err := io.CopyN(io.Discard, c, rest); err != nil {
				return
			}
		}
		for left := downloadSize; left > 0; left -= len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
	return portOf(l)
}

// download reads a whole download from c after asking for it with ask,
// and returns how long it took.
func download(b *testing.B, c net.Conn, ask []byte) time.Duration {
	start := time.Now()
	if _, err := c.Write(ask); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if n != downloadSize {
		b.Fatalf("downloaded %d bytes, want %d", n, downloadSize)
	}
	return time.Since(start)
}

// tunnelTo opens a CONNECT tunnel through the proxy at addr (on network
// "tcp" or "unix") to target.
func tunnelTo(b *testing.B, network, addr, target string) net.Conn {
	c, err := net.Dial(network, addr)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", target)
	br := bufio.NewReaderSize(c, 64)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("CONNECT: %v, %v", resp, err)
	}
	if br.Buffered() > 0 {
		b.Fatal("bytes after the CONNECT answer")
	}
	return c
}

// unixProxy serves a proxy that names 127.0.0.2 on a unix socket and
// returns the socket's path.
func unixProxy(b *testing.B) string {
	p := New(&allowAll{}, &Options{NamesAddress: named("127.0.0.2")})
	l, err := net.Listen("unix", b.TempDir()+"/egress.sock")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = p.Serve(context.WithoutCancel(b.Context()), l) }()
	b.Cleanup(func() { _ = p.Close() })
	return l.Addr().String()
}

// bareRelay listens on loopback and relays each connection to target
// with nothing but io.Copy both ways (splice(2) between the sockets): one
// more loopback hop and nothing else, the floor any relay stands on. It
// returns its address.
func bareRelay(b *testing.B, target string) string {
	l := testkit.Loopback(b)
	testkit.ServeConns(b, l, func(c net.Conn) {
		up, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer up.Close()
		go func() { _, _ = io.Copy(up, c); closeWrite(up) }()
		_, _ = io.Copy(c, up)
	})
	return l.Addr().String()
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A way is one way to reach a loopback "outside" host: its name, how to
// connect and what to ask for a download with.
type way struct {
	name string
	dial func() net.Conn
	ask  []byte
	wall []time.Duration // each iteration's time
	cpu  []time.Duration // the CPU each download cost the whole process
}

// BenchmarkDownloadThroughProxy downloads 100 MiB from a loopback
// "outside" host in each iteration five ways, in an order that turns from
// one iteration to the next: directly; through a CONNECT tunnel of the
// proxy on a loopback port (as a sandboxed server reaches it), and on a
// unix socket (which shows what the client's loopback TCP leg costs);
// through one to a TLS port, where the proxy reads and checks the
// ClientHello before it relays; and through a bare splice relay, the
// floor of one more hop. It reports each way's median throughput and CPU
// per download (the whole process's: source, relay and client), the
// median of the iterations' ratios to direct (the goal: at least 0.8)
// with their quartiles, and the proxy's median ratio to the bare relay.
// The machine is noisy: run it with -benchtime 30x or more.
func BenchmarkDownloadThroughProxy(b *testing.B) {
	port := sourceOutside(b)
	target := fmt.Sprintf("127.0.0.2:%d", port)
	proxy, _, _ := startProxy(b, &allowAll{}, Options{NamesAddress: named("127.0.0.2")})
	tlsProxy, _, _ := startProxy(b, &allowAll{}, Options{
		Resolver:     newResolver(map[string][]string{"example.com": {"127.0.0.2"}}),
		NamesAddress: named("127.0.0.2"),
		TLSPorts:     []uint16{port},
	})
	sock := unixProxy(b)
	relay := bareRelay(b, target)
	dialer := func(addr string) func() net.Conn {
		return func() net.Conn {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}
	}
	one := []byte{1}
	direct := &way{name: "direct", dial: dialer(target), ask: one}
	proxied := &way{name: "proxied", dial: func() net.Conn { return tunnelTo(b, "tcp", proxy, target) }, ask: one}
	floor := &way{name: "relay", dial: dialer(relay), ask: one}
	ways := []*way{
		direct,
		proxied,
		{name: "proxied-unix", dial: func() net.Conn { return tunnelTo(b, "unix", sock, target) }, ask: one},
		{name: "proxied-tls", dial: func() net.Conn { return tunnelTo(b, "tcp", tlsProxy, fmt.Sprintf("example.com:%d", port)) }, ask: clientHello(b, "example.com")},
		floor,
	}
	i := 0
	for b.Loop() {
		for k := range ways {
			w := ways[(i+k)%len(ways)]
			c := w.dial()
			cpu := cpuTime(b)
			w.wall = append(w.wall, download(b, c, w.ask))
			w.cpu = append(w.cpu, cpuTime(b)-cpu)
			c.Close()
		}
		i++
	}
	mib := float64(downloadSize) / (1 << 20)
	for _, w := range ways {
		b.ReportMetric(mib/median(w.wall).Seconds(), w.name+"-MiB/s")
		b.ReportMetric(float64(median(w.cpu).Microseconds())/1000, w.name+"-cpu-ms")
		if w == direct {
			continue
		}
		q := quartiles(ratios(direct.wall, w.wall))
		b.ReportMetric(q[1], w.name+"-ratio")
		b.ReportMetric(q[0], w.name+"-ratio-q1")
		b.ReportMetric(q[2], w.name+"-ratio-q3")
	}
	b.ReportMetric(quartiles(ratios(floor.wall, proxied.wall))[1], "proxied-to-relay")
}

// ratios returns, iteration by iteration, how fast a way was against a
// base: the base's time over its time.
func ratios(base, other []time.Duration) []float64 {
	rs := make([]float64, len(base))
	for i := range base {
		rs[i] = base[i].Seconds() / other[i].Seconds()
	}
	return rs
}

// quartiles returns the first quartile, median and third quartile of xs.
func quartiles(xs []float64) [3]float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	return [3]float64{s[n/4], s[n/2], s[(3*n)/4]}
}

// BenchmarkConnectionSetup times, in each iteration and in an order that
// turns, a direct connection to a loopback echo, a tunnel to it through
// the proxy (CONNECT, a decision, the checks, the dial) and one through
// the bare relay (one more hop, nothing else), each until a first byte
// comes back, and reports the medians and what the proxy and the relay
// add at the median.
func BenchmarkConnectionSetup(b *testing.B) {
	port := echoOutside(b)
	target := fmt.Sprintf("127.0.0.2:%d", port)
	proxy, _, _ := startProxy(b, &allowAll{}, Options{NamesAddress: named("127.0.0.2"), TLSPorts: []uint16{}})
	relay := bareRelay(b, target)
	dial := func(addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	direct := &way{name: "direct", dial: func() net.Conn { return dial(target) }}
	proxied := &way{name: "proxied", dial: func() net.Conn { return tunnelTo(b, "tcp", proxy, target) }}
	floor := &way{name: "relay", dial: func() net.Conn { return dial(relay) }}
	ways := []*way{direct, proxied, floor}
	one := []byte{1}
	i := 0
	for b.Loop() {
		for k := range ways {
			w := ways[(i+k)%len(ways)]
			start := time.Now()
			c := w.dial()
			if _, err := c.Write(one); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, one); err != nil {
				b.Fatal(err)
			}
			w.wall = append(w.wall, time.Since(start))
			c.Close()
		}
		i++
	}
	for _, w := range ways {
		b.ReportMetric(float64(median(w.wall).Microseconds()), w.name+"-p50-µs")
	}
	d := median(direct.wall)
	b.ReportMetric(float64((median(proxied.wall) - d).Microseconds()), "added-p50-µs")
	b.ReportMetric(float64((median(floor.wall) - d).Microseconds()), "relay-added-p50-µs")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
