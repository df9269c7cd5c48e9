// Package httpserve runs an HTTP server for as long as a context lasts:
// the one "serve until done, then shut down" loop of the proxy's
// listener, the approvals page and the metrics endpoint.
package httpserve

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Run serves srv on ln until ctx is done or serving fails. When ctx is
// done it shuts srv down gracefully, waiting at most grace for requests in
// flight (on a context that ctx's cancellation does not reach), after
// calling beforeShutdown, if not nil, with that context. It returns once
// srv.Serve has returned: served is the error that ended serving early
// (nil if ctx ended it), shutdown the error of srv.Shutdown. A listener
// closed under Serve (net.ErrClosed) ends it early like any other error;
// callers that close it on purpose test for that.
func Run(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration, beforeShutdown func(context.Context)) (served, shutdown error) {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err, nil
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if beforeShutdown != nil {
		beforeShutdown(sctx)
	}
	err := srv.Shutdown(sctx)
	<-errc // http.ErrServerClosed, or the error of a listener closed meanwhile
	return nil, err
}
