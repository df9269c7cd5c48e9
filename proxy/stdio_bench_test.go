package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// BenchmarkStdioTransport compares mcpwarden's stdio transport with the
// mcp-go StdioServer it replaced, in front of the same proxy and upstream
// (the in-process catalog upstream over HTTP), one round trip per op:
// ping (mcpwarden answers itself), and an echo tools/call with one and
// with 16 calls in flight. Compare the ns/op of each pair; ratios, not
// absolute times, are the claim.
func BenchmarkStdioTransport(b *testing.B) {
	e := newCatalogEnv(b, allowAllServers, Options{})
	transports := []struct {
		name  string
		serve func(ctx context.Context, in io.Reader, out io.Writer) error
	}{
		{"mcp-go StdioServer", func(ctx context.Context, in io.Reader, out io.Writer) error {
			st := server.NewStdioServer(e.srv.mcp)
			st.SetErrorLogger(log.New(io.Discard, "", 0))
			return st.Listen(ctx, in, out)
		}},
		{"mcpwarden", func(ctx context.Context, in io.Reader, out io.Writer) error {
			return ServeStdio(ctx, e.srv, in, out)
		}},
	}
	workloads := []struct {
		name     string
		inFlight int
		line     string // %d is the id
	}{
		{"ping c1", 1, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`},
		{"echo c1", 1, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hello from the load client"}}}`},
		{"echo c16", 16, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hello from the load client"}}}`},
	}
	for _, w := range workloads {
		for _, tr := range transports {
			b.Run(w.name+"/"+tr.name, func(b *testing.B) {
				in, out := benchStdio(b, tr.serve)
				id := 0
				send := func() {
					id++
					fmt.Fprintf(in, w.line+"\n", id)
				}
				for range w.inFlight {
					send()
				}
				b.ReportAllocs()
				for b.Loop() {
					if !out.Scan() {
						b.Fatal("the transport stopped answering")
					}
					send()
				}
				for range w.inFlight {
					out.Scan()
				}
			})
		}
	}
}

// benchStdio serves one stdio connection with serve until the benchmark
// ends, initialized, and returns its input and a scanner of its output.
func benchStdio(b *testing.B, serve func(context.Context, io.Reader, io.Writer) error) (io.Writer, *bufio.Scanner) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		serve(b.Context(), inR, outW)
	}()
	b.Cleanup(func() {
		inW.Close()
		outR.Close()
		<-done
	})
	out := bufio.NewScanner(outR)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"`+strconv.Itoa(b.N)+`"}}}`)
	if !out.Scan() {
		b.Fatal("no answer to initialize")
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return inW, out
}
