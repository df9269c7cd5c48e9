//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// httpGet fetches url with Go's default transport, which takes its proxy
// from the environment (HTTP_PROXY and the rest), as a Go server does.
func httpGet(url, _ string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, trim(b))
	}
	return "got " + trim(b), nil
}

// The one-line clients httpClient runs: each fetches its first argument
// as programs in its language usually do, printing the body, and fails
// on an error status.
const (
	nodeFetch = `fetch(process.argv[1]).then(async r => { const t = await r.text(); if (!r.ok) { console.error(r.status, t); process.exit(1) } console.log(t) }).catch(e => { console.error(String(e.cause || e)); process.exit(1) })`
	pyFetch   = `import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())`
)

// httpClient runs interpreter (node or python3) on its one-line client of
// url, with this server's environment.
func httpClient(interpreter, url string) (string, error) {
	var args []string
	switch base := filepath.Base(interpreter); {
	case base == "node":
		args = []string{"-e", nodeFetch, url}
	case strings.HasPrefix(base, "python3"):
		args = []string{"-c", pyFetch, url}
	default:
		return "", fmt.Errorf("no client for %s", interpreter)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, interpreter, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, trim([]byte(stderr.String())))
	}
	return "got " + trim(out), nil
}

// inheritedSockets looks for a socket among the descriptors the server
// was started with (other than its stdio) and tries to accept on each,
// or to receive a descriptor on it: the egress listener, or the socket
// it was handed to mcpwarden on, would let the server past the proxy.
func inheritedSockets(_, _ string) (string, error) {
	var found []string
	for fd := 3; fd < 1024; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			continue
		}
		link, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		found = append(found, fmt.Sprintf("fd %d (%s)", fd, link))
	}
	if len(found) == 0 {
		return "", fmt.Errorf("no socket among the inherited descriptors")
	}
	return "inherited " + strings.Join(found, ", "), nil
}
