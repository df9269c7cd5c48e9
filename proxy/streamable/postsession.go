package streamable

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// notificationBuffer is how many notifications a POST's event stream
// holds before it is written, as mcp-go's sessions hold.
const notificationBuffer = 100

// A postSession is the session one POST served by the front is handled
// with: the registered session of its client (tools, log level, client
// info and the rest are its), whose notifications and elicitations go on
// the POST's own event stream while the POST is served, as mcp-go's
// server sends them. The response becomes an event stream when the first
// of them is written; until then nothing is made for it, not even the
// goroutine that forwards notifications. Once the response is written
// everything goes to the registered session, as it went with mcp-go: the
// proxy keeps a request's context (and so this session) to reach its
// client later.
type postSession struct {
	baseSession
	front *front

	mu       sync.Mutex // guards the fields below and writing to w
	w        http.ResponseWriter
	ending   bool                         // finish has begun: notifications go to the registered session
	done     bool                         // the response is written, or being written
	upgraded bool                         // the response is an event stream, its header sent
	notified bool                         // a notification was sent while serving: mcp-go then answers with an event stream
	notes    chan mcp.JSONRPCNotification // made on first use
	stop     chan struct{}                // stops forward
	forwards sync.WaitGroup               // forward
}

// NotificationChannel is where mcp-go sends the session's notifications:
// the POST's stream while it is served, the registered session's after.
func (ps *postSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ending {
		return ps.baseSession.NotificationChannel()
	}
	if ps.notes == nil {
		ps.notes = make(chan mcp.JSONRPCNotification, notificationBuffer)
		ps.stop = make(chan struct{})
		ps.forwards.Go(ps.forward)
	}
	return ps.notes
}

// UpgradeToSSEWhenReceiveNotification is what mcp-go calls before it
// sends a notification: the response to the POST is then an event
// stream, and the registered session's later ones too, as with mcp-go.
func (ps *postSession) UpgradeToSSEWhenReceiveNotification() {
	ps.baseSession.UpgradeToSSEWhenReceiveNotification()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.ending {
		ps.notified = true
	}
}

// RequestElicitation sends the client an elicitation on the POST's
// stream and waits for its answer, which the client posts on the session
// (see front.deliver), or for ctx to end. Once the POST is answered it
// goes to the registered session (the GET stream), as with mcp-go.
func (ps *postSession) RequestElicitation(ctx context.Context, request mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	f := ps.front
	key := answerKey{session: ps.SessionID(), id: f.requestIDs.Add(1)}
	answer := make(chan clientAnswer, 1)
	data, err := json.Marshal(mcp.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(key.id),
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  request.Params,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding an elicitation for the client: %w", err)
	}
	f.answers.Store(key, answer)
	defer f.answers.Delete(key)
	if !ps.send(data) {
		f.answers.Delete(key)
		return ps.baseSession.RequestElicitation(ctx, request)
	}
	select {
	case a := <-answer:
		if a.err != nil {
			return nil, a.err
		}
		var result mcp.ElicitationResult
		if err := json.Unmarshal(a.result, &result); err != nil {
			return nil, fmt.Errorf("failed to unmarshal elicitation response: %v", err) // mcp-go's words
		}
		return &result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// forward writes the notifications sent to the POST's stream until it is
// stopped; finish writes those left.
func (ps *postSession) forward() {
	for {
		select {
		case n := <-ps.notes:
			if data, err := json.Marshal(n); err != nil {
				ps.front.logger.Error("encoding a notification to the HTTP client", "err", err)
			} else {
				ps.send(data)
			}
		case <-ps.stop:
			return
		}
	}
}

// send writes data, an encoded message, on the POST's event stream, and
// reports false when the response is written already (data is then not
// sent).
func (ps *postSession) send(data []byte) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.done {
		return false
	}
	ps.writeEvent(data)
	return true
}

// writeEvent writes data as one event of the response's stream, making
// the response one first, and flushes it. The caller holds mu, or is the
// one writing the response.
func (ps *postSession) writeEvent(data []byte) {
	if !ps.upgraded {
		h := ps.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		ps.w.WriteHeader(http.StatusOK)
		ps.upgraded = true
	}
	// One write per message: the stream writer (wire.StreamWriter) finds
	// a streamed result's placeholder only within one.
	event := make([]byte, 0, len(eventPrefix)+len(data)+len(eventSuffix))
	event = append(append(append(event, eventPrefix...), data...), eventSuffix...)
	if _, err := ps.w.Write(event); err != nil {
		ps.front.logger.Error("writing an event to the HTTP client", "err", err)
	}
	ps.w.(http.Flusher).Flush()
}

// The frame of an event, as mcp-go writes it.
const (
	eventPrefix = "event: message\ndata: "
	eventSuffix = "\n\n"
)

// finish writes resp, the response to the POST, after the notifications
// sent while it was served, unless ctx (the HTTP request's) has ended:
// as JSON, or as the last event of the stream when the response became
// one. Every notification sent to the POST's stream before is written
// (mcp-go's server drops one its forwarder has taken but not written
// when the response is ready); one sent once finish has begun goes to
// the registered session.
func (ps *postSession) finish(ctx context.Context, resp mcp.JSONRPCMessage) {
	ps.mu.Lock()
	ps.ending = true
	stop := ps.stop
	ps.mu.Unlock()
	if stop != nil {
		close(stop)
		ps.forwards.Wait()
	}
	ps.mu.Lock()
	for drained := ps.notes == nil; !drained; {
		select {
		case n := <-ps.notes:
			if data, err := json.Marshal(n); err == nil {
				ps.writeEvent(data)
			}
		default:
			drained = true
		}
	}
	ps.done = true
	ps.mu.Unlock()
	defer func() {
		ps.mu.Lock()
		ps.w = nil // the request is over: nothing is written to it again
		ps.mu.Unlock()
	}()
	w := ps.w
	switch {
	case resp == nil:
		if !ps.upgraded {
			w.WriteHeader(http.StatusAccepted)
		}
	case ctx.Err() != nil:
	case ps.upgraded || ps.notified:
		data, err := encode(resp)
		if err != nil {
			ps.front.logger.Error("encoding the response to the HTTP client", "err", err)
			return
		}
		ps.writeEvent(data)
	default:
		data, err := encode(resp)
		if err != nil {
			ps.front.logger.Error("encoding the response to the HTTP client", "err", err)
			return // as mcp-go's encoder, which writes nothing then
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		// One write, with the newline mcp-go's encoder ends it with.
		if _, err := w.Write(append(data, '\n')); err != nil {
			ps.front.logger.Error("writing the response to the HTTP client", "err", err)
		}
	}
}

// encode is the encoding of msg: itself when it is one already.
func encode(msg mcp.JSONRPCMessage) ([]byte, error) {
	if e, ok := msg.(wire.Encoded); ok {
		return e, nil
	}
	return json.Marshal(msg)
}
