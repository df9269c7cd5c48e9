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
// does not know is left unknown (the request gets 404). Without shared
// state refresh does nothing.
func (hs *Sessions) refresh(ctx context.Context, id string) error {
	if hs.shared == nil || !strings.HasPrefix(id, sessiontable.IDPrefix) {
		return nil
	}
	idle := hs.ids.Limits().IdleTimeout
	if hs.ids.Known(id) {
		err := hs.shared.TouchSession(ctx, id, idle)
		if errors.Is(err, state.ErrNotFound) {
			// Ended on another replica, or expired: end it here too.
			hs.ids.Terminate(id)
			hs.end(ctx, id)
			return nil
		}
		return err
	}
	rec, err := hs.shared.LoadSession(ctx, id)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := hs.shared.TouchSession(ctx, id, idle); err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return nil
		}
		return err
	}
	hs.ids.Adopt(rec)
	return nil
}

// endShared ends session id in the shared state, its grants with it, as
// a DELETE does on any replica.
func (hs *Sessions) endShared(ctx context.Context, id string) error {
	if hs.shared == nil {
		return nil
	}
	if err := hs.shared.RevokeSession(ctx, id); err != nil {
		return err
	}
	return hs.shared.EndSession(ctx, id)
}

// save writes the shared record of session id, which principal (with
// profile) opens with the initialize that cs served.
func (hs *Sessions) save(ctx context.Context, id, principal, profile string, cs server.ClientSession) error {
	if hs.shared == nil {
		return nil
	}
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
	return hs.shared.SaveSession(ctx, rec, hs.ids.Limits().IdleTimeout)
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
func (hs *Sessions) touchBusy(ctx context.Context) {
	if hs.shared == nil {
		return
	}
	for _, id := range hs.ids.BusyIDs() {
		if err := hs.shared.TouchSession(ctx, id, hs.ids.Limits().IdleTimeout); err != nil && !errors.Is(err, state.ErrNotFound) {
			hs.logger.Warn("keeping a busy session alive in the shared state", "session", id, "err", err)
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
