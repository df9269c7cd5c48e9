package streamable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
)

// With shared state (Host.State, proxy.Options.State) the HTTP listener's sessions live in
// it, so that any replica serves any request of any session: the replica
// that issues a session ID saves its record (protocol, client
// capabilities and info, principal, profile) before the ID is sent; a
// replica that gets a request of a session it does not know loads the
// record and adopts the session (load on miss); every request restarts
// the record's idle clock (touch on use), and a record that has expired
// or was ended on another replica ends the session here too; a DELETE
// ends the record and revokes the session's grants everywhere. mcp-go
// serves a request of a session it did not initialize with a session of
// that request's own, which knows nothing of the client: restore gives it
// the record's client info, capabilities (elicitation) and protocol
// version before the request is handled. A shared state that cannot be
// reached refuses the request (errSharedState); nothing falls back to
// this replica's memory.

// A peering is how this replica's HTTP sessions are kept in step with the
// other replicas': alone, when it is the only one (no Host.State), or
// replicated, through the shared state. NewHandler chooses once; nothing
// else asks whether there is shared state.
type peering interface {
	// refresh brings session id up to date with the other replicas
	// before a request of it is served.
	refresh(ctx context.Context, id string) error
	// endEverywhere ends session id for every replica, its grants with
	// it, as a DELETE does.
	endEverywhere(ctx context.Context, id string) error
	// touchBusy keeps the sessions with a request in progress here alive
	// for every replica.
	touchBusy(ctx context.Context)
	// issuing readies r, a request that may issue a session for
	// principal; share keeps the record of a session it issued, before
	// the ID is sent, and refuses the session when it cannot.
	issuing(r *http.Request, principal string) (_ *http.Request, share func(issued string) error)
	// relaying carries the requests to the client and the client's
	// answers of request r of owned session id across replicas. handled
	// is set when r was answered here (a response handed on to the
	// replica that claimed it); else the response is written to rw, and
	// done is called once it is.
	relaying(w http.ResponseWriter, r *http.Request, id string) (rw http.ResponseWriter, done func(), handled bool, err error)
}

// alone is the peering of the only replica: there is no one to keep in
// step with.
type alone struct{}

func (alone) refresh(context.Context, string) error       { return nil }
func (alone) endEverywhere(context.Context, string) error { return nil }
func (alone) touchBusy(context.Context)                   {}
func (alone) issuing(r *http.Request, _ string) (*http.Request, func(string) error) {
	return r, func(string) error { return nil }
}
func (alone) relaying(w http.ResponseWriter, _ *http.Request, _ string) (http.ResponseWriter, func(), bool, error) {
	return w, func() {}, false, nil
}

// replicated is the peering of one of several replicas, through the
// shared state store.
type replicated struct {
	hs    *Sessions
	store state.Store

	mu     sync.Mutex
	relays map[string]struct{} // request IDs claimed here (see relay.go)
}

// newReplicated is the peering of hs through store.
func newReplicated(hs *Sessions, store state.Store) *replicated {
	return &replicated{hs: hs, store: store, relays: map[string]struct{}{}}
}

// peeringOf is the peering of hs: replicated through store, or alone when
// store is nil.
func peeringOf(hs *Sessions, store state.Store) peering {
	if store == nil {
		return alone{}
	}
	return newReplicated(hs, store)
}

// errSharedState refuses a request that needs the shared state while it
// cannot be reached.
var errSharedState = errors.New("mcpwarden cannot reach its shared state (state.url); the request is refused rather than served from one replica's memory")

// refuseShared answers a request that needs the shared state when err
// kept it from being read or written. The client gets no detail (it
// would name internal addresses); the log has it.
func (hs *Sessions) refuseShared(w http.ResponseWriter, err error) {
	hs.logger.Error("refusing a request: shared state", "err", err)
	http.Error(w, "Service Unavailable: "+errSharedState.Error(), http.StatusServiceUnavailable)
}

// refresh brings session id up to date with the shared state before a
// request of it is served: a session known here has its idle clock
// restarted, and is ended here when the shared state no longer has it; a
// session unknown here is adopted from its record. An ID the shared state
// does not know is left unknown (the request gets 404).
func (rp *replicated) refresh(ctx context.Context, id string) error {
	if !strings.HasPrefix(id, sessiontable.IDPrefix) {
		return nil
	}
	hs := rp.hs
	idle := hs.ids.Limits().IdleTimeout
	if hs.ids.Known(id) {
		err := rp.store.TouchSession(ctx, id, idle)
		if errors.Is(err, state.ErrNotFound) {
			// Ended on another replica, or expired: end it here too.
			hs.ids.Terminate(id)
			hs.end(ctx, id)
			return nil
		}
		return err
	}
	rec, err := rp.store.LoadSession(ctx, id)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := rp.store.TouchSession(ctx, id, idle); err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return nil
		}
		return err
	}
	hs.ids.Adopt(rec)
	return nil
}

// endEverywhere ends session id in the shared state, its grants with it,
// as a DELETE does on any replica.
func (rp *replicated) endEverywhere(ctx context.Context, id string) error {
	if err := rp.store.RevokeSession(ctx, id); err != nil {
		return err
	}
	return rp.store.EndSession(ctx, id)
}

// issuing notes the client session that serves r, so that share can save
// its record.
func (rp *replicated) issuing(r *http.Request, principal string) (*http.Request, func(string) error) {
	r, held := withIssuing(r)
	return r, func(issued string) error {
		if err := rp.save(r.Context(), issued, principal, rp.hs.profileOf(r.Context()), held.session()); err != nil {
			rp.hs.logger.Error("refusing a new HTTP session: shared state", "err", err)
			return errSharedState
		}
		return nil
	}
}

// save writes the shared record of session id, which principal (with
// profile) opens with the initialize that cs served.
func (rp *replicated) save(ctx context.Context, id, principal, profile string, cs server.ClientSession) error {
	rec := state.Session{ID: id, Principal: principal, Profile: profile}
	if ci, ok := cs.(server.SessionWithClientInfo); ok {
		info := ci.GetClientInfo()
		rec.Client = state.ClientInfo{Name: info.Name, Version: info.Version}
		caps, err := json.Marshal(ci.GetClientCapabilities())
		if err != nil {
			return fmt.Errorf("encoding the client capabilities of session %q: %w", id, err)
		}
		rec.Capabilities = caps
	}
	if pv, ok := cs.(protocolVersioned); ok {
		rec.Protocol = pv.ProtocolVersion()
	}
	return rp.store.SaveSession(ctx, rec, rp.hs.ids.Limits().IdleTimeout)
}

// protocolVersioned is a session that records the protocol version
// negotiated at initialize (mcp-go's HTTP sessions do).
type protocolVersioned interface {
	ProtocolVersion() string
	SetProtocolVersion(string)
}

// restore gives the session serving a request of an adopted session (one
// initialized on another replica) what its initialize told: the client's
// info and capabilities and the protocol version, so that the client is
// asked through elicitation when it can be, and audited by name. A
// session initialized here already knows them and is left alone.
func (hs *Sessions) restore(ctx context.Context) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil || cs.SessionID() == "" {
		return
	}
	rec := hs.ids.Record(cs.SessionID())
	if rec == nil {
		return
	}
	ci, ok := cs.(server.SessionWithClientInfo)
	if !ok {
		return
	}
	if info := ci.GetClientInfo(); info.Name != "" || info.Version != "" {
		return
	}
	ci.SetClientInfo(mcp.Implementation{Name: rec.Client.Name, Version: rec.Client.Version})
	var caps mcp.ClientCapabilities
	if len(rec.Capabilities) > 0 {
		// A record this code wrote; one it cannot read declares nothing,
		// so the client is not elicited.
		_ = json.Unmarshal(rec.Capabilities, &caps)
	}
	ci.SetClientCapabilities(caps)
	if pv, ok := cs.(protocolVersioned); ok && rec.Protocol != "" {
		pv.SetProtocolVersion(rec.Protocol)
	}
}

// touchBusy restarts the shared idle clock of the sessions with a request
// in progress here (a long call, an open GET stream), which keep their
// session alive however long they take.
func (rp *replicated) touchBusy(ctx context.Context) {
	for _, id := range rp.hs.ids.BusyIDs() {
		if err := rp.store.TouchSession(ctx, id, rp.hs.ids.Limits().IdleTimeout); err != nil && !errors.Is(err, state.ErrNotFound) {
			rp.hs.logger.Warn("keeping a busy session alive in the shared state", "session", id, "err", err)
		}
	}
}

// An issuing holds the client session of a request that may issue a
// session ID, so that its record can be saved before the ID is sent.
type issuing struct {
	mu sync.Mutex
	cs server.ClientSession
}

type issuingKey struct{}

// withIssuing returns r with a fresh issuing in its context.
func withIssuing(r *http.Request) (*http.Request, *issuing) {
	h := &issuing{}
	return r.WithContext(context.WithValue(r.Context(), issuingKey{}, h)), h
}

// noteIssuing records the client session serving the request of ctx, if
// the request may issue a session.
func noteIssuing(ctx context.Context) {
	if h, ok := ctx.Value(issuingKey{}).(*issuing); ok {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.cs = server.ClientSessionFromContext(ctx)
	}
}

// session returns the client session noted, or nil.
func (h *issuing) session() server.ClientSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cs
}
