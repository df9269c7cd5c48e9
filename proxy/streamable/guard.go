package streamable

import (
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
	"github.com/mcpwarden/mcpwarden/rules"
)

// guard keeps each HTTP session to its principal, keeps the
// number of sessions under the caps, tells the idle timeout which
// sessions are in use, and answers 404 to a GET or DELETE naming a
// session that is not live, as MCP's streamable HTTP transport asks
// (mcp-go checks the session of a POST itself, but would open a GET
// stream for any ID, a terminated one included).
//
// The principal a request was authenticated as (a token's, or
// PrincipalAnonymous without auth) becomes the owner of the session whose
// ID the response issues, before the ID is sent. A later request naming
// that session as another principal — another token, or none — is refused
// with 403 and audited: a session's grants, pending asks and upstream
// requests are its owner's.
//
// A GET without a session ID gets 400, as MCP asks of a server that
// issues sessions. A request that may open a session (a POST without a
// session ID, on a protocol that has sessions) first reserves a place under
// http.max_sessions_per_principal and http.max_sessions, or is refused
// with 429 or 503 naming the setting. A session issued by a request that
// had no reservation (an initialize sent on an existing session) is
// counted when its ID is about to be sent and, over a cap, refused the
// same way instead of the response, and ended.
func (hs *Sessions) guard(next http.Handler) http.Handler {
	ids := hs.ids
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal := hs.principalOf(r.Context())
		id := r.Header.Get(server.HeaderKeySessionID)
		if id == "" {
			if r.Method == http.MethodGet && !modern(r) {
				// mcp-go would mint a session ID for the stream and never
				// send it: a session no one can own, name or end.
				http.Error(w, "Bad Request: a GET stream needs the Mcp-Session-Id that initialize issued", http.StatusBadRequest)
				return
			}
			var res *sessiontable.Reservation
			if mayOpenSession(r) {
				var err error
				if res, err = hs.reserve(r.Context(), principal); err != nil {
					hs.refuseSession(w, err)
					return
				}
				defer ids.Release(res)
			}
			hs.serveIssuing(w, r, "", res, principal, next)
			return
		}
		if err := hs.peers.refresh(r.Context(), id); err != nil {
			hs.refuseShared(w, err)
			return
		}
		live, owned := ids.Begin(id, principal)
		if owned {
			defer ids.End(id)
		}
		if !live && (r.Method == http.MethodGet || r.Method == http.MethodDelete) {
			http.Error(w, "Not Found: "+sessiontable.ErrUnknownSession.Error(), http.StatusNotFound)
			return
		}
		// An unowned live session fails closed: no one can prove to own it.
		if live && !owned {
			hs.audit(r.Context(), audit.Event{
				Event:     audit.KindDecision,
				Session:   id,
				Principal: principal,
				Profile:   hs.profileOf(r.Context()),
				Method:    r.Method + " " + EndpointPath,
				Decision:  rules.Deny.String(),
				Rule:      RuleSessionOwner,
				GrantedBy: audit.GrantedByRule,
				Reason:    "the session belongs to another principal",
			})
			http.Error(w, "Forbidden: this session was opened by another principal", http.StatusForbidden)
			return
		}
		if owned && r.Method == http.MethodDelete {
			// Ended everywhere before it is ended here: a DELETE that
			// cannot reach the shared state leaves the session whole.
			if err := hs.peers.endEverywhere(r.Context(), id); err != nil {
				hs.refuseShared(w, err)
				return
			}
		}
		if owned && !modern(r) {
			// Requests to the client that this response carries are
			// claimed, so that their answers find their way here.
			rw, done, handled, err := hs.peers.relaying(w, r, id)
			if err != nil {
				hs.refuseShared(w, err)
				return
			}
			if handled {
				return
			}
			defer done()
			w = rw
		}
		hs.serveIssuing(w, r, id, nil, principal, next)
	})
}

// mayOpenSession reports whether mcp-go may issue a session for r, which
// has no session ID: a POST (an initialize) on a protocol before
// 2026-07-28, which has no sessions.
func mayOpenSession(r *http.Request) bool {
	return r.Method == http.MethodPost && !modern(r)
}

// modern reports whether r says it speaks protocol 2026-07-28 or later.
func modern(r *http.Request) bool {
	return mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
}

// refuseSession answers a request that would open a session over a cap.
func (hs *Sessions) refuseSession(w http.ResponseWriter, err error) {
	hs.logger.Warn("refusing a new HTTP session", "err", err)
	http.Error(w, "mcpwarden refused a new session: "+err.Error(), sessionLimitStatus(err))
}

// sessionLimitStatus is the HTTP status err is answered with.
func sessionLimitStatus(err error) int {
	if errors.Is(err, errSharedState) {
		return http.StatusServiceUnavailable
	}
	if le, ok := errors.AsType[*sessiontable.LimitError](err); ok {
		return le.Status
	}
	return http.StatusServiceUnavailable
}

// serveIssuing serves r through next, making the principal the owner of
// any session ID the response issues other than current (the request's
// own), with res's place when there is one. A session issued over a cap
// (by an initialize sent on an existing session, which had no
// reservation) is refused instead of its response and ended once mcp-go
// is done with the request.
func (hs *Sessions) serveIssuing(w http.ResponseWriter, r *http.Request, current string, res *sessiontable.Reservation, principal string, next http.Handler) {
	var over string
	// share saves the record of a session claimed here, before its ID is
	// sent; a record that cannot be saved refuses the session.
	r, share := hs.peers.issuing(r, principal)
	bw := &bindingWriter{ResponseWriter: w, bind: func(issued string) error {
		if issued == current {
			return nil
		}
		if res != nil && hs.ids.Claim(issued, res) {
			if err := share(issued); err != nil {
				over = issued
				return err
			}
			return nil
		}
		extra, err := hs.reserve(r.Context(), principal)
		if err == nil && hs.ids.Claim(issued, extra) {
			if err := share(issued); err != nil {
				over = issued
				return err
			}
			return nil
		}
		if extra != nil {
			hs.ids.Release(extra)
		}
		over = issued
		if err == nil {
			err = sessiontable.ErrUnknownSession // ended before it could be owned
		}
		hs.logger.Warn("refusing a new HTTP session", "err", err)
		return err
	}}
	next.ServeHTTP(bw, r)
	if over != "" {
		hs.ids.Terminate(over)
		hs.end(r.Context(), over)
	}
}

// RuleSessionOwner names the built-in rule that keeps a session to its
// principal, in audit events.
const RuleSessionOwner = "builtin:session-owner"

// A bindingWriter calls bind with the session ID a response issues, when
// its headers are written (before the client can learn the ID). When bind
// refuses the session, the response is replaced by the refusal: the
// client gets the error, not the ID.
type bindingWriter struct {
	http.ResponseWriter
	bind    func(id string) error
	bound   bool
	refused bool
}

func (b *bindingWriter) WriteHeader(code int) {
	if b.refused {
		return
	}
	if !b.bound {
		b.bound = true
		if id := b.Header().Get(server.HeaderKeySessionID); id != "" {
			if err := b.bind(id); err != nil {
				b.refused = true
				clear(b.Header()) // the session ID and the response's type go
				http.Error(b.ResponseWriter, "mcpwarden refused a new session: "+err.Error(), sessionLimitStatus(err))
				return
			}
		}
	}
	b.ResponseWriter.WriteHeader(code)
}

func (b *bindingWriter) Write(p []byte) (int, error) {
	if !b.bound {
		b.WriteHeader(http.StatusOK)
	}
	if b.refused {
		return len(p), nil
	}
	return b.ResponseWriter.Write(p)
}

// Flush passes on to the underlying writer, for SSE.
func (b *bindingWriter) Flush() {
	if !b.bound {
		b.WriteHeader(http.StatusOK)
	}
	if b.refused {
		return
	}
	if f, ok := b.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (b *bindingWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }
