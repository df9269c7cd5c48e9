package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// SessionID is the id of the one session a stdio connection carries,
// the id mcp-go's own stdio transport gives it.
const SessionID = "stdio"

// stdioNotificationQueue is how many notifications mcp-go may queue for
// the client before its sends fail, as in mcp-go's own stdio transport.
const stdioNotificationQueue = 100

// A stdioSession is the client session of one stdio connection, as mcp-go
// sees it: it records what initialize negotiated and sends the client the
// server's own requests (sampling, elicitation, roots), matching their
// answers by id. It implements the same session interfaces as mcp-go's
// stdio session, and no others, so mcp-go treats a stdio client as before;
// unlike mcp-go's, it belongs to its connection rather than to the process.
type stdioSession struct {
	write         func(ctx context.Context, msg []byte) error // sends one message to the client, or gives up when ctx ends
	notifications chan mcp.JSONRPCNotification

	initialized  atomic.Bool
	logLevel     atomic.Value // mcp.LoggingLevel
	clientInfo   atomic.Value // mcp.Implementation
	capabilities atomic.Value // mcp.ClientCapabilities
	version      atomic.Value // string

	lastID    atomic.Int64
	pendingMu sync.Mutex
	pending   map[int64]chan clientReply // requests to the client awaiting their answer
}

var (
	_ server.ClientSession                    = (*stdioSession)(nil)
	_ server.SessionWithLogging               = (*stdioSession)(nil)
	_ server.SessionWithClientInfo            = (*stdioSession)(nil)
	_ server.SessionWithProtocolVersion       = (*stdioSession)(nil)
	_ interface{ SetProtocolVersion(string) } = (*stdioSession)(nil)
	_ server.SessionWithSampling              = (*stdioSession)(nil)
	_ server.SessionWithElicitation           = (*stdioSession)(nil)
	_ server.SessionWithRoots                 = (*stdioSession)(nil)
)

func newStdioSession(write func(context.Context, []byte) error) *stdioSession {
	return &stdioSession{
		write:         write,
		notifications: make(chan mcp.JSONRPCNotification, stdioNotificationQueue),
		pending:       map[int64]chan clientReply{},
	}
}

func (s *stdioSession) SessionID() string { return SessionID }

func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return s.notifications
}

func (s *stdioSession) Initialize() {
	s.logLevel.Store(mcp.LoggingLevelError)
	s.initialized.Store(true)
}

func (s *stdioSession) Initialized() bool { return s.initialized.Load() }

func (s *stdioSession) SetLogLevel(level mcp.LoggingLevel) { s.logLevel.Store(level) }

func (s *stdioSession) GetLogLevel() mcp.LoggingLevel {
	level, ok := s.logLevel.Load().(mcp.LoggingLevel)
	if !ok {
		return mcp.LoggingLevelError
	}
	return level
}

func (s *stdioSession) GetClientInfo() mcp.Implementation {
	info, _ := s.clientInfo.Load().(mcp.Implementation)
	return info
}

func (s *stdioSession) SetClientInfo(info mcp.Implementation) { s.clientInfo.Store(info) }

func (s *stdioSession) GetClientCapabilities() mcp.ClientCapabilities {
	caps, _ := s.capabilities.Load().(mcp.ClientCapabilities)
	return caps
}

func (s *stdioSession) SetClientCapabilities(caps mcp.ClientCapabilities) {
	s.capabilities.Store(caps)
}

func (s *stdioSession) ProtocolVersion() string {
	version, _ := s.version.Load().(string)
	return version
}

func (s *stdioSession) SetProtocolVersion(version string) { s.version.Store(version) }

// RequestSampling asks the client to sample and waits for its answer.
func (s *stdioSession) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	raw, err := s.request(ctx, mcp.MethodSamplingCreateMessage, req.CreateMessageParams)
	if err != nil {
		return nil, fmt.Errorf("sampling request failed: %w", err)
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("failed to unmarshal sampling response: %w", err)
	}
	// The content arrives as map[string]any; mcp-go's callers expect the
	// content types (TextContent, ImageContent, AudioContent).
	if res.Content, err = mcp.ParseSamplingContent(res.Content); err != nil {
		return nil, fmt.Errorf("failed to parse sampling response content: %w", err)
	}
	return &res, nil
}

// RequestElicitation asks the client to elicit input and waits for its answer.
func (s *stdioSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	raw, err := s.request(ctx, mcp.MethodElicitationCreate, req.Params)
	if err != nil {
		return nil, fmt.Errorf("elicitation request failed: %w", err)
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("failed to unmarshal elicitation response: %w", err)
	}
	return &res, nil
}

// ListRoots asks the client for its roots and waits for its answer.
func (s *stdioSession) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	raw, err := s.request(ctx, mcp.MethodListRoots, nil)
	if err != nil {
		return nil, fmt.Errorf("list roots request failed: %w", err)
	}
	var res mcp.ListRootsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("failed to unmarshal list roots response: %w", err)
	}
	return &res, nil
}

// A clientReply is the client's answer to one of the session's requests:
// its result, or the message of its error.
type clientReply struct {
	result json.RawMessage
	err    error
}

// errClientGone is the answer of every request still waiting when the
// connection ends.
var errClientGone = errors.New("the stdio client went away")

// request sends the client a request for method with params (omitted when
// nil) and returns the result it answers with, or its error, or ctx's.
func (s *stdioSession) request(ctx context.Context, method mcp.MCPMethod, params any) (json.RawMessage, error) {
	id := s.lastID.Add(1)
	reply := make(chan clientReply, 1)
	s.pendingMu.Lock()
	if s.pending == nil {
		s.pendingMu.Unlock()
		return nil, errClientGone
	}
	s.pending[id] = reply
	s.pendingMu.Unlock()
	defer func() {
		s.pendingMu.Lock()
		delete(s.pending, id)
		s.pendingMu.Unlock()
	}()
	msg, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{mcp.JSONRPC_VERSION, id, string(method), params})
	if err != nil {
		return nil, err
	}
	if err := s.write(ctx, msg); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-reply:
		return r.result, r.err
	}
}

// answer hands a response from the client to the request of the session
// it answers and reports whether there was one. A response whose id names
// no request waiting is left to mcp-go, as mcp-go's own transport does.
func (s *stdioSession) answer(r *wire.Head) bool {
	id, err := strconv.ParseInt(string(r.ID), 10, 64)
	if err != nil {
		return false
	}
	var reply clientReply
	switch {
	case r.Error != nil:
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(r.Error, &e) != nil {
			return false
		}
		reply.err = fmt.Errorf("the client answered with error %d: %s", e.Code, e.Message)
	case r.Result != nil:
		reply.result = r.Result
	default:
		return false
	}
	s.pendingMu.Lock()
	ch, ok := s.pending[id]
	delete(s.pending, id) // an id is answered once
	s.pendingMu.Unlock()
	if ok {
		ch <- reply // buffered for the one answer
	}
	return ok
}

// close answers every request still waiting with errClientGone and makes
// later ones fail at once.
func (s *stdioSession) close() {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	for _, ch := range s.pending {
		ch <- clientReply{err: errClientGone}
	}
	s.pending = nil
}
