package proxy

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// methodParams are the params the enumeration test sends with each method
// the proxy classifies. A method added to clientMethods without params
// here fails the test.
var methodParams = map[mcp.MCPMethod]string{
	mcp.MethodInitialize:             `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"unit","version":"0"}}`,
	mcp.MethodPing:                   `{}`,
	mcp.MethodServerDiscover:         `{}`,
	mcp.MethodSubscriptionsListen:    `{"filter":{"resourceSubscriptions":["fs+file:///srv/readme"]}}`,
	mcp.MethodResourcesList:          `{}`,
	mcp.MethodResourcesTemplatesList: `{}`,
	mcp.MethodPromptsList:            `{}`,
	mcp.MethodToolsList:              `{}`,
	mcp.MethodTasksGet:               `{"taskId":"t-1"}`,
	mcp.MethodTasksList:              `{}`,
	mcp.MethodTasksResult:            `{"taskId":"t-1"}`,
	mcp.MethodTasksCancel:            `{"taskId":"t-1"}`,
	mcp.MethodToolsCall:              `{"name":"fs__echo","arguments":{"text":"hi"}}`,
	mcp.MethodResourcesRead:          `{"uri":"fs+file:///srv/app/x"}`,
	mcp.MethodResourcesSubscribe:     `{"uri":"fs+file:///srv/readme"}`,
	mcp.MethodResourcesUnsubscribe:   `{"uri":"fs+file:///srv/readme"}`,
	mcp.MethodPromptsGet:             `{"name":"fs__greet","arguments":{"who":"a"}}`,
	mcp.MethodCompletionComplete:     `{"ref":{"type":"ref/prompt","name":"fs__greet"},"argument":{"name":"who","value":"a"}}`,
	mcp.MethodSetLogLevel:            `{"level":"debug"}`,
}

// TestEveryRequestReachingAnUpstreamIsDecidedAndAudited sends every method
// the client-facing server routes and checks that each request an upstream
// received on its account has a decision event and a result event with its
// method, and that every decided method does reach the upstream when
// allowed (so the check is not vacuous).
func TestEveryRequestReachingAnUpstreamIsDecidedAndAudited(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:*:*"}}}, Options{})
	c := e.client(t)
	tr := c.GetTransport()
	_, fsN := e.fs.since(0)
	_, hidN := e.hid.since(0)
	auditN := len(e.sink.events(t))
	id := 100
	for method, class := range clientMethods {
		params, ok := methodParams[method]
		if !ok {
			t.Errorf("method %s is classified but the test has no params for it", method)
			continue
		}
		id++
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		_, _ = tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(id)), Method: string(method), Params: json.RawMessage(params)})
		cancel()
		var fsGot, hidGot []mcp.MCPMethod
		fsGot, fsN = e.fs.since(fsN)
		hidGot, hidN = e.hid.since(hidN)
		events := e.sink.events(t)
		fresh := events[auditN:]
		auditN = len(events)
		reached := 0
		for _, got := range []struct {
			server  string
			methods []mcp.MCPMethod
		}{{"fs", fsGot}, {"hidden", hidGot}} {
			for _, m := range got.methods {
				reached++
				if class != methodDecided {
					t.Errorf("%s, which the proxy answers itself, sent %s to %s", method, m, got.server)
				}
				var decided, resulted bool
				for _, ev := range fresh {
					if ev.Server != got.server || ev.Method != string(m) {
						continue
					}
					decided = decided || ev.Event == audit.KindDecision && ev.Decision == "allow"
					resulted = resulted || ev.Event == audit.KindResult
				}
				if !decided || !resulted {
					t.Errorf("%s reached %s as %s with decision event %v and result event %v, want both", method, got.server, m, decided, resulted)
				}
			}
		}
		if class == methodDecided && reached == 0 {
			t.Errorf("%s is classified as decided but reached no upstream although allowed", method)
		}
	}
}

func TestUnknownMethodIsRefused(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:*:*"}}}, Options{})
	c := e.client(t)
	res, err := c.GetTransport().SendRequest(t.Context(), transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(7)), Method: "resources/frobnicate", Params: json.RawMessage(`{"uri":"fs+file:///srv/readme"}`)})
	if err == nil && (res.Error == nil || !strings.Contains(res.Error.Message, "does not forward")) {
		t.Errorf("an unknown method got %+v, want a refusal", res)
	}
}

// TestOnlyTheGateTouchesUpstreamSessions holds the code to the paths the
// enumeration test checks: an upstream's session is taken only in
// upstream_gate.go, tools/call reaches the upstream only in relay.go, a
// client's request is forwarded only from request.go (after its decision)
// and mcpwarden's own session is used only for listing and roots.
func TestOnlyTheGateTouchesUpstreamSessions(t *testing.T) {
	t.Parallel()
	allowed := map[string][]string{
		"upstream.Session": {"upstream_gate.go"},
		"upstream.Request": {"upstream_gate.go"},
		"upstream.Call":    {"relay.go"},
		"forwardRequest":   {"request.go"},
		"ownSession":       {"catalog.go"},
		"ownRequest":       {"subscribers.go"},
		"withSession":      {"upstream_gate.go"},
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			key := sel.Sel.Name
			if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "upstream" {
				key = "upstream." + key
			}
			if where, ok := allowed[key]; ok && !contains(where, name) {
				t.Errorf("%s: %s is called outside %v", fset.Position(call.Pos()), key, where)
			}
			return true
		})
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// TestRequestKindsCoverTheDecidedMethods keeps RequestKinds, which check
// accepts, in step with what the proxy decides.
func TestRequestKindsCoverTheDecidedMethods(t *testing.T) {
	t.Parallel()
	kinds := RequestKinds()
	for m, class := range clientMethods {
		// Unsubscribe is decided as resources/subscribe.
		if class != methodDecided || m == mcp.MethodToolsCall || m == mcp.MethodResourcesUnsubscribe {
			continue
		}
		if !contains(kinds, string(m)) {
			t.Errorf("%s is decided but not in RequestKinds", m)
		}
	}
}

// FuzzGateRequest checks that no request makes the gate panic and that a
// method the proxy has not classified is always refused, whatever else
// the message holds.
func FuzzGateRequest(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"hidden+file:///srv/readme"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe","params":{"uri":""}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/frobnicate","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__echo"}}`,
		`{"method":["x"]}`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	e := newCatalogEnv(f, denyHidden, Options{})
	f.Fuzz(func(t *testing.T, data []byte) {
		err := e.srv.gateRequest(context.Background(), nil, json.RawMessage(data))
		var msg struct {
			Method mcp.MCPMethod `json:"method"`
		}
		if json.Unmarshal(data, &msg) == nil && clientMethods[msg.Method] == methodUnknown && err == nil {
			t.Errorf("unclassified method %q was let through", msg.Method)
		}
	})
}
