package proxy

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// EndpointPath is where the streamable HTTP endpoint is served.
const EndpointPath = "/mcp"

// ServeStdio serves one client over in and out until ctx is done or in
// ends. Nothing but protocol messages is written to out.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.logger.Handler(), slog.LevelError))
	err := stdio.Listen(ctx, in, out)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// HTTPOptions configure the streamable HTTP listener.
type HTTPOptions struct {
	// BearerToken, when set, must be sent by every client as
	// "Authorization: Bearer <token>"; requests without it get 401 before
	// any MCP processing.
	BearerToken string
	// Ready, when set, receives the bound address once the listener is up.
	Ready func(addr net.Addr)
}

// ServeHTTP serves streamable HTTP at EndpointPath on addr until ctx is
// done, then shuts down, giving requests in flight a few seconds.
func (s *Server) ServeHTTP(ctx context.Context, addr string, o HTTPOptions) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	stream := server.NewStreamableHTTPServer(s.mcp,
		server.WithEndpointPath(EndpointPath),
		server.WithStreamableHTTPLogger(s.logger),
	)
	mux := http.NewServeMux()
	mux.Handle(EndpointPath, requireBearer(o.BearerToken, stream))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	s.logger.Info("serving streamable HTTP", "url", "http://"+ln.Addr().String()+EndpointPath)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	stream.CloseSessions(shutdown)
	err = srv.Shutdown(shutdown)
	<-errc
	if err != nil {
		return fmt.Errorf("shutting down HTTP: %w", err)
	}
	return nil
}

// requireBearer refuses requests that do not carry token. An empty token
// lets every request through (loopback listeners without auth).
func requireBearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpwarden"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
