package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"
)

// downloadSize is what one download carries.
const downloadSize = 100 << 20

// sourceOutside serves, on 127.0.0.2, downloadSize bytes to every
// connection (after one byte from the client, so that a tunnel's set-up
// is not timed as throughput), and returns its port.
func sourceOutside(b *testing.B) uint16 {
	l := outsideListener(b, "127.0.0.2")
	chunk := make([]byte, 1<<20)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				one := make([]byte, 1)
				if _, err := io.ReadFull(c, one); err != nil {
					return
				}
				for left := downloadSize; left > 0; left -= len(chunk) {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	return portOf(l)
}

// download reads a whole download from c after asking for it, and
// returns how long it took.
func download(b *testing.B, c net.Conn) time.Duration {
	start := time.Now()
	if _, err := c.Write([]byte{1}); err != nil {
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

// tunnelTo opens a CONNECT tunnel through the proxy to target.
func tunnelTo(b *testing.B, proxy, target string) net.Conn {
	c, err := net.Dial("tcp", proxy)
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

// BenchmarkDownloadThroughProxy downloads 100 MiB from a loopback
// "outside" host directly and through a CONNECT tunnel in each iteration,
// and reports both throughputs and their ratio (goal: at least 0.8).
func BenchmarkDownloadThroughProxy(b *testing.B) {
	port := sourceOutside(b)
	target := fmt.Sprintf("127.0.0.2:%d", port)
	proxy, _, _ := startProxy(b, &allowAll{}, Options{NamesAddress: named("127.0.0.2")})
	var direct, proxied time.Duration
	for b.Loop() {
		c, err := net.Dial("tcp", target)
		if err != nil {
			b.Fatal(err)
		}
		direct += download(b, c)
		c.Close()
		c = tunnelTo(b, proxy, target)
		proxied += download(b, c)
		c.Close()
	}
	mb := float64(b.N) * downloadSize / (1 << 20)
	b.ReportMetric(mb/direct.Seconds(), "direct-MiB/s")
	b.ReportMetric(mb/proxied.Seconds(), "proxied-MiB/s")
	b.ReportMetric(direct.Seconds()/proxied.Seconds(), "ratio")
}

// BenchmarkConnectionSetup times, in each iteration, a direct connection
// to a loopback echo and a tunnel to it through the proxy (CONNECT, a
// decision, the checks, the dial), each until a first byte comes back,
// and reports the medians and the time the proxy adds at the median.
func BenchmarkConnectionSetup(b *testing.B) {
	port := echoOutside(b)
	target := fmt.Sprintf("127.0.0.2:%d", port)
	proxy, _, _ := startProxy(b, &allowAll{}, Options{NamesAddress: named("127.0.0.2"), TLSPorts: []uint16{}})
	roundTrip := func(c net.Conn) {
		one := []byte{1}
		if _, err := c.Write(one); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, one); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	var direct, proxied []time.Duration
	for b.Loop() {
		start := time.Now()
		c, err := net.Dial("tcp", target)
		if err != nil {
			b.Fatal(err)
		}
		roundTrip(c)
		direct = append(direct, time.Since(start))
		start = time.Now()
		roundTrip(tunnelTo(b, proxy, target))
		proxied = append(proxied, time.Since(start))
	}
	d, p := median(direct), median(proxied)
	b.ReportMetric(float64(d.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(p.Microseconds()), "proxied-p50-µs")
	b.ReportMetric(float64((p - d).Microseconds()), "added-p50-µs")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
