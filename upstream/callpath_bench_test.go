//go:build unix

package upstream

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkLineLimiterResponses is the lineLimiter's work on one small
// tools/call response whose result the stash takes (as every echo call
// over stdio has it), read the way mcp-go's stdio transport reads lines.
func BenchmarkLineLimiterResponses(b *testing.B) {
	const batch = 64
	var msgs []byte
	for i := range batch {
		msgs = fmt.Appendf(msgs, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"hello from the bench %d"}]}}`+"\n", 100+i, i)
	}
	src := &loopReader{data: msgs}
	stash := newResultStash()
	br := bufio.NewReader(newLineLimiter(src, 10<<20, false, stash))
	keys := make([]string, batch)
	for i := range keys {
		keys[i] = strconv.Itoa(100 + i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		key := keys[i%batch]
		stash.expect(key)
		if _, err := br.ReadString('\n'); err != nil {
			b.Fatal(err)
		}
		if _, ok := stash.take(key); !ok {
			b.Fatal("the stash did not take the result")
		}
		i++
	}
}

// A loopReader returns data over and over, a line per read, as a pipe
// does from a server that writes each message at once.
type loopReader struct {
	data []byte
	off  int
}

func (r *loopReader) Read(p []byte) (int, error) {
	if r.off == len(r.data) {
		r.off = 0
	}
	end := len(r.data)
	if i := bytes.IndexByte(r.data[r.off:], '\n'); i >= 0 {
		end = r.off + i + 1
	}
	n := copy(p, r.data[r.off:end])
	r.off += n
	return n, nil
}

var _ io.Reader = (*loopReader)(nil)

// BenchmarkPoolCallStdio is Pool.Call over stdio to the stand-in server
// with 16 calls in flight, as the bench's c16 echo row makes them. Besides
// ns/op it reports cpu-µs/op, this process's CPU time per call (the
// child's is not counted), which is what issue 21 budgets.
func BenchmarkPoolCallStdio(b *testing.B) {
	benchPoolCallStdio(b, Spec{Transport: TransportStdio, Command: os.Args[0], Env: map[string]string{stdioServerEnv: filepath.Join(b.TempDir(), "pid")}})
}

// benchPoolCallStdio measures calls to the stdio server of spec, 16 in
// flight, reporting cpu-µs/op beside ns/op.
func benchPoolCallStdio(b *testing.B, spec Spec) {
	pool := Start(b.Context(), map[string]Spec{"stdio": spec}, nil)
	b.Cleanup(func() { pool.Close() })
	if err := pool.Err("stdio"); err != nil {
		b.Fatal(err)
	}
	params := mcp.CallToolParams{Name: "tool1", Arguments: map[string]any{"text": "hello from the bench"}}
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := pool.Call(b.Context(), "stdio", nil, params); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
