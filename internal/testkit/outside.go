package testkit

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// OutsideHost starts a web server on 127.0.0.1 standing in for a host on
// the internet, for the tests of what a sandboxed server may reach: it
// answers every request "hello from outside", and is closed when the test
// ends. It returns its port.
func OutsideHost(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello from outside")
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}
