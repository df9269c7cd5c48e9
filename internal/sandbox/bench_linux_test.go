package sandbox

import (
	"bufio"
	"io"
	"os/exec"
	"testing"
	"time"
)

const initializeLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"

// BenchmarkServerStartup starts the Go test server until it answers
// initialize, unsandboxed and in each tier, one after the other in each
// iteration, and reports each tier's start-up as a ratio of the
// unsandboxed one.
func BenchmarkServerStartup(b *testing.B) {
	w := world{sbxHome: b.TempDir(), sbxTmp: b.TempDir(), work: b.TempDir()}
	var plainTime, nsTime, llTime time.Duration
	for b.Loop() {
		plainTime += timeStart(b, exec.Command(env.evil), nil)
		for _, m := range tiers {
			c, err := Command(b.Context(), env.self, w.policy(m), []string{env.evil})
			if err != nil {
				b.Fatal(err)
			}
			d := timeStart(b, c.Cmd, c)
			if m == nsTier {
				nsTime += d
			} else {
				llTime += d
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(plainTime.Microseconds())/n, "µs-unsandboxed")
	b.ReportMetric(float64(nsTime.Microseconds())/n, "µs-namespaces")
	b.ReportMetric(float64(llTime.Microseconds())/n, "µs-landlock")
	b.ReportMetric(float64(nsTime)/float64(plainTime), "ratio-namespaces")
	b.ReportMetric(float64(llTime)/float64(plainTime), "ratio-landlock")
}

// timeStart is how long cmd (through c, if sandboxed) takes to answer
// initialize; it stops the server after.
func timeStart(b *testing.B, cmd *exec.Cmd, c *Cmd) time.Duration {
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	begin := time.Now()
	if c != nil {
		err = c.Start()
	} else {
		err = cmd.Start()
	}
	if err != nil {
		b.Fatal(err)
	}
	io.WriteString(in, initializeLine)
	if _, err := bufio.NewReader(out).ReadBytes('\n'); err != nil {
		b.Fatal(err)
	}
	d := time.Since(begin)
	in.Close()
	if c != nil {
		c.Wait()
	} else {
		cmd.Wait()
	}
	return d
}
