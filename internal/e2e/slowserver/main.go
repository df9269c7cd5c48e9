// Command slowserver is a stand-in MCP server for the end-to-end tests of
// shutdown: it speaks just enough of MCP over stdio (newline-delimited
// JSON-RPC) to offer one tool, sleep, which answers after the seconds it
// is given unless it is cancelled first. It writes every message it
// receives, one line each ("<method> <id>"), to the file named by -log,
// so a test can see which requests and notifications reached it — a
// notifications/cancelled in particular. It is written by hand, without
// an SDK, so that nothing between the wire and the log can hide a message.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"
)

// A message is any JSON-RPC message the server receives.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// A server answers on stdout and logs to its log file.
type server struct {
	mu      sync.Mutex // guards out, log and waiting
	out     *os.File
	log     *os.File
	waiting map[string]chan struct{} // sleep calls in progress, by request ID
}

func main() {
	logPath := flag.String("log", "", "file to append every received message to")
	flag.Parse()
	logFile, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowserver:", err)
		os.Exit(1)
	}
	s := &server{out: os.Stdout, log: logFile, waiting: map[string]chan struct{}{}}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 16<<20)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			continue
		}
		s.handle(m)
	}
	s.record("stdin closed", nil)
}

// record appends one line to the log and syncs it.
func (s *server) record(what string, id json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.log, "%s %s\n", what, id)
	_ = s.log.Sync()
}

func (s *server) send(id json.RawMessage, result any) {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, "%s\n", data)
}

func (s *server) handle(m message) {
	s.record(m.Method, m.ID)
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		s.send(m.ID, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "slowserver", "version": "1.0.0"},
		})
	case "ping":
		s.send(m.ID, map[string]any{})
	case "tools/list":
		s.send(m.ID, map[string]any{"tools": []any{map[string]any{
			"name":        "sleep",
			"description": "Answers after the given number of seconds.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"seconds": map[string]any{"type": "number"}}},
		}}})
	case "tools/call":
		var p struct {
			Arguments struct {
				Seconds float64 `json:"seconds"`
			} `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		done := make(chan struct{})
		s.mu.Lock()
		s.waiting[string(m.ID)] = done
		s.mu.Unlock()
		go func() {
			select {
			case <-time.After(time.Duration(p.Arguments.Seconds * float64(time.Second))):
				s.send(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "slept"}}})
			case <-done: // cancelled: no answer, as MCP asks
			}
		}()
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		s.mu.Lock()
		if done, ok := s.waiting[string(p.RequestID)]; ok {
			close(done)
			delete(s.waiting, string(p.RequestID))
		}
		s.mu.Unlock()
		s.record("cancelled request", p.RequestID)
	default:
		if len(m.ID) > 0 {
			data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			s.mu.Lock()
			fmt.Fprintf(s.out, "%s\n", data)
			s.mu.Unlock()
		}
	}
}
