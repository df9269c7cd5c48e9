// Package haproxy holds how mcpwarden's tests and bench run HAProxy as the
// load balancer in front of replicas: where the binary is and the
// configuration. It is not test code, so the bench can use it without
// importing internal/testkit.
package haproxy

import (
	"fmt"
	"strings"
)

// Bin is where Debian's haproxy package installs HAProxy.
const Bin = "/usr/sbin/haproxy"

// Config is the configuration of the balancer on addr in front of
// backends (host:port each) that the tests (internal/testkit.StartHAProxy)
// and the bench run: plain HTTP, round robin request by request with no
// affinity, a backend taken out by a TCP health check every 200ms, a
// request whose connection fails sent to another backend, one already
// sent never sent again.
func Config(addr string, backends []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
  maxconn 4096
  log stderr format short local0

defaults
  mode http
  # Requests that failed are logged, to the test's output when it fails.
  log global
  option httplog
  option dontlog-normal
  timeout connect 1s
  timeout client 120s
  timeout server 120s
  timeout http-request 10s
  # A request whose connection to a backend fails goes to another one;
  # one already sent is not retried (a tools/call is not idempotent).
  retries 2
  option redispatch 1
  retry-on conn-failure
  # A new connection per request: a request is never sent on an idle
  # connection to a backend that has just died, where it could only fail.
  http-reuse never

frontend mcp
  bind %s
  default_backend replicas

backend replicas
  balance roundrobin
`, addr)
	for i, be := range backends {
		fmt.Fprintf(&b, "  server r%d %s check inter 200ms fall 1 rise 2\n", i, be)
	}
	return b.String()
}
