package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/freeport"
)

// A proc is a child process the benchmark started, in its own process
// group so that stopping it also stops what it started.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// startProc starts command with its stdout and stderr appended to logPath.
func startProc(name, logPath string, env []string, command string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(command, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process's id.
func (p *proc) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after a grace
// period, and waits for the process. It is idempotent. (Outside Unix it
// kills the process alone: see procs_other.go.)
func (p *proc) Stop() {
	if p == nil || p.Exited() {
		return
	}
	p.terminateGroup()
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		p.killGroup()
		<-p.done
	}
	p.killGroup() // stragglers in the group
}

// freeAddr returns a loopback address with a port that was free a moment
// ago and not returned before in this run (freeport.Addr, which the tests'
// testkit.FreeAddr shares).
func freeAddr() (string, error) { return freeport.Addr() }

// initializeBody is a raw initialize request, for readiness probes.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocolVersion + `","capabilities":{},"clientInfo":{"name":"mcpwarden-bench-probe","version":"1"}}}`

// answersInitialize reports whether url answers an initialize POST with a
// result.
func answersInitialize(ctx context.Context, hc *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(initializeBody))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode == http.StatusOK && bytes.Contains(buf.Bytes(), []byte(`"result"`))
}

// waitInitialize polls url with initialize every millisecond until it
// answers, p exits or timeout passes.
func waitInitialize(ctx context.Context, p *proc, url string, timeout time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if answersInitialize(ctx, hc, url) {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited before answering initialize at %s", p.name, url)
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("%s did not answer initialize within %s", url, timeout)
}

// waitTCP waits until addr accepts connections, p exits or timeout passes.
func waitTCP(p *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited before listening on %s", p.name, addr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on %s within %s", p.name, addr, timeout)
}

// rssBytes is VmRSS of pid from /proc/PID/status: the process itself, not
// its children.
func rssBytes(pid int) (int64, error) { return procStatus(pid, "VmRSS:") }

// procStatus is the value of a size field (VmRSS:, VmHWM:) of
// /proc/PID/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			return parseKB(rest)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no " + field + " line")
}

// parseKB parses a /proc status value such as "  12345 kB" into bytes.
func parseKB(s string) (int64, error) {
	fields := strings.Fields(s)
	if len(fields) != 2 || fields[1] != "kB" {
		return 0, fmt.Errorf("unexpected value %q", s)
	}
	n, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0, err
	}
	return n << 10, nil
}

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTime is the user + system CPU time pid has used, from /proc/PID/stat
// (its own threads, not its children).
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(data))
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/PID/stat line. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from its closing parenthesis.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name in stat")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short stat line")
	}
	utime, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * clockTick, nil
}
