package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// With shared state, the client's answer to a request mcpwarden sent it
// (elicitation, sampling, roots) may reach another replica than the one
// waiting for it: the client POSTs its JSON-RPC response, and a load
// balancer without affinity sends it anywhere. The replica that sends a
// request to the client first claims its ID for the session in the
// shared state (an ask named by relayID), and waits there for the answer
// besides waiting locally; a replica that gets a response it did not
// claim hands it on through the shared state, which wakes the claimant,
// which hands it to its own front (the elicitation of a POST it served
// waits there) or mcp-go, as if the client had sent it there.
//
// mcp-go numbers the requests of each replica on its own, so two
// replicas may send one session requests with the same ID. The claim
// settles that: a replica that cannot claim an ID (another holds it)
// withholds its request, which then times out here (no answer: the ask
// goes on to the next resolver), rather than let an answer reach the
// wrong request.

// DefaultRelayTTL bounds how long a claim on a request ID stays in the
// shared state; the request that made it withdraws it when it ends.
const DefaultRelayTTL = 10 * time.Minute

// relayID names the claim on request id of session in the shared state.
func relayID(session string, id int64) string {
	return "relay:" + session + ":" + strconv.FormatInt(id, 10)
}

// relayed are the request IDs the server→client requests of one HTTP
// request claimed, and the goroutines waiting for their answers.
type relayed struct {
	rp      *replicated
	session string
	header  http.Header // the client request's, for the protocol version
	ctx     context.Context
	wg      sync.WaitGroup

	mu      sync.Mutex
	claimed []string
}

// clientRequestMethods are the requests mcpwarden sends a client.
var clientRequestMethods = map[string]bool{
	string(mcp.MethodElicitationCreate):     true,
	string(mcp.MethodSamplingCreateMessage): true,
	string(mcp.MethodListRoots):             true,
}

// claimAll claims the ID of every request to the client in p, an SSE
// chunk mcp-go is about to send, and reports whether p may be sent: not
// when a request in it could not be claimed.
func (rl *relayed) claimAll(p []byte) bool {
	ok := true
	for line := range bytes.Lines(p) {
		data, found := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: "))
		if !found {
			continue
		}
		var msg struct {
			ID     *int64 `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(data, &msg) != nil || msg.ID == nil || !clientRequestMethods[msg.Method] {
			continue
		}
		if !rl.claim(*msg.ID) {
			ok = false
		}
	}
	return ok
}

// claim claims request id for the session and starts waiting for an
// answer relayed from another replica.
func (rl *relayed) claim(id int64) bool {
	name := relayID(rl.session, id)
	rp := rl.rp
	err := rp.store.PublishAsk(rl.ctx, state.Ask{ID: name, AskedAt: time.Now(), Body: json.RawMessage(`{"relay":true}`)}, DefaultRelayTTL)
	if err != nil {
		rp.hs.logger.Warn("withholding a request to the client: its ID is not this replica's to claim", "session", rl.session, "id", id, "err", err)
		return false
	}
	rp.mu.Lock()
	rp.relays[name] = struct{}{}
	rp.mu.Unlock()
	rl.mu.Lock()
	rl.claimed = append(rl.claimed, name)
	rl.mu.Unlock()
	rl.wg.Go(func() {
		raw, err := rp.store.WaitAnswer(rl.ctx, name)
		if err != nil {
			return // the request ended, or the answer came here
		}
		rp.deliver(rl.ctx, rl.session, rl.header, raw)
		rp.release(rl.ctx, name) // answered: the ID is free again
	})
	return true
}

// release gives up the claim name, if this replica still holds it.
func (rp *replicated) release(ctx context.Context, name string) {
	rp.mu.Lock()
	_, held := rp.relays[name]
	delete(rp.relays, name)
	rp.mu.Unlock()
	if !held {
		return
	}
	if _, _, err := rp.store.WithdrawAsk(context.WithoutCancel(ctx), name); err != nil {
		rp.hs.logger.Warn("withdrawing a claim on a request ID", "claim", name, "err", err)
	}
}

// done withdraws the claims and waits for their waiters; the request's
// context must have ended, or end, for them to return.
func (rl *relayed) done() {
	rl.wg.Wait()
	rl.mu.Lock()
	defer rl.mu.Unlock()
	for _, name := range rl.claimed {
		rl.rp.release(rl.ctx, name)
	}
}

// deliver hands the client's response raw to this replica's front, as if
// the client had posted it here.
func (rp *replicated) deliver(ctx context.Context, session string, header http.Header, raw []byte) {
	hs := rp.hs
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, EndpointPath, bytes.NewReader(raw))
	if err != nil {
		hs.logger.Error("delivering a relayed response", "session", session, "err", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(server.HeaderKeySessionID, session)
	if v := header.Get(mcp.HeaderProtocolVersion); v != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, v)
	}
	rec := &discardResponse{header: http.Header{}}
	hs.front.ServeHTTP(rec, req)
}

// relaying claims the requests to the client that the response to r
// carries and, for a POST, first hands on a response of the client that
// another replica claimed (relayResponse).
func (rp *replicated) relaying(w http.ResponseWriter, r *http.Request, id string) (http.ResponseWriter, func(), bool, error) {
	if r.Method == http.MethodPost {
		if handled, err := rp.relayResponse(r.Context(), w, r, id); err != nil || handled {
			return w, func() {}, handled, err
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	rl := &relayed{rp: rp, session: id, header: r.Header, ctx: ctx}
	return &relayWriter{ResponseWriter: w, rl: rl}, func() { cancel(); rl.done() }, false, nil
}

// relayResponse hands on a JSON-RPC response the client posted on
// session, when another replica claimed its request ID, and reports
// whether it did (the request is then answered). A response this replica
// claimed, or that no one claimed, is left to mcp-go here.
func (rp *replicated) relayResponse(ctx context.Context, w http.ResponseWriter, r *http.Request, session string) (handled bool, err error) {
	bb, ok := r.Body.(*wire.Body)
	if !ok {
		return false, nil
	}
	var msg struct {
		ID     *int64          `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(bb.Bytes(), &msg) != nil || msg.ID == nil || msg.Method != "" || msg.Result == nil && msg.Error == nil {
		return false, nil
	}
	name := relayID(session, *msg.ID)
	rp.mu.Lock()
	_, mine := rp.relays[name]
	rp.mu.Unlock()
	if mine {
		rp.release(ctx, name) // answered here: mcp-go delivers it, and the ID is free again
		return false, nil
	}
	switch err := rp.store.AnswerAsk(ctx, name, bytes.Clone(bb.Bytes())); {
	case errors.Is(err, state.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	w.WriteHeader(http.StatusAccepted)
	return true, nil
}

// A relayWriter claims the IDs of the requests to the client that a
// response carries before they are sent, and withholds those it cannot
// claim.
type relayWriter struct {
	http.ResponseWriter
	rl *relayed
}

func (w *relayWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"method"`)) && !w.rl.claimAll(p) {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes on to the underlying writer, for SSE.
func (w *relayWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *relayWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
