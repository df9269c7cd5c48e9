package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/drain"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A hangingUpstream is a stand-in for an upstream, server "slow", whose
// tool "sleep" and resource file:///slow answer only when the request's
// context ends: it tells entered when one arrives and causes why its
// context ended. Requests other than tools/call go to an in-process
// mcp-go server.
type hangingUpstream struct {
	entered chan struct{}
	causes  chan error
	session *client.Client
	caps    mcp.ServerCapabilities
}

func newHangingUpstream(t *testing.T) *hangingUpstream {
	t.Helper()
	h := &hangingUpstream{entered: make(chan struct{}, 1), causes: make(chan error, 1)}
	s := server.NewMCPServer("slow", "1.0", server.WithResourceCapabilities(false, false))
	s.AddResource(mcp.NewResource("file:///slow", "slow"), func(ctx context.Context, _ mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		h.entered <- struct{}{}
		<-ctx.Done()
		h.causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	c := testkit.Connect(t, s, "2025-11-25")
	h.session, h.caps = c, c.GetServerCapabilities()
	return h
}

func (h *hangingUpstream) Names() []string { return []string{"slow"} }

func (h *hangingUpstream) Tools(string) ([]mcp.Tool, error) {
	return []mcp.Tool{mcp.NewTool("sleep")}, nil
}

func (h *hangingUpstream) Call(ctx context.Context, _ string, _ *upstream.Route, _ mcp.CallToolParams) (json.RawMessage, error) {
	h.entered <- struct{}{}
	<-ctx.Done()
	h.causes <- context.Cause(ctx)
	return nil, context.Cause(ctx)
}

func (h *hangingUpstream) Session(string) (*client.Client, mcp.ServerCapabilities, error) {
	return h.session, h.caps, nil
}
func (h *hangingUpstream) Request(ctx context.Context, _ string, _ *upstream.Route, do func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error) {
	return do(ctx, h.session, h.caps)
}

func (h *hangingUpstream) EndSession(string)                    {}
func (h *hangingUpstream) RootsChanged(context.Context, string) {}
func (h *hangingUpstream) Protocol(string) string               { return "" }

// drainingServer is a proxy allowing everything of a hangingUpstream.
func drainingServer(t *testing.T) (*Server, *hangingUpstream) {
	t.Helper()
	up := newHangingUpstream(t)
	p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Default: "allow"}, Servers: map[string]rules.ServerSpec{"slow": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Upstream: up, Policy: p, Audit: audit.New(&memorySink{}, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	return srv, up
}

// TestDrainCancelsOtherRequestsStillRunningAfterGrace: a resources/read
// in progress at the end of the grace period is cancelled like a call,
// and its client is told mcpwarden is shutting down.
func TestDrainCancelsOtherRequestsStillRunningAfterGrace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, up := drainingServer(t)
		read := make(chan error, 1)
		go func() {
			_, err := srv.catalog.readResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "file:///slow"}})
			read <- err
		}()
		<-up.entered
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		srv.Drain(ctx)
		if cause := <-up.causes; cause == nil {
			t.Error("the upstream's read was not cancelled")
		}
		if err := <-read; err == nil || !strings.HasPrefix(err.Error(), "mcpwarden is shutting down") || !strings.Contains(err.Error(), "mcp:slow:resources/read") {
			t.Errorf("the read cut at the end of the grace period: %v, want it to say mcpwarden is shutting down", err)
		}
		_, err := srv.catalog.readResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "file:///slow"}})
		if err == nil || !errors.Is(err, ErrShuttingDown) {
			t.Errorf("a read after Drain: %v, want it refused as shutting down", err)
		}
	})
}

func TestDrainCancelsCallsStillRunningAfterGrace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, up := drainingServer(t)
		tool, ok := srv.Lookup("slow__sleep")
		if !ok {
			t.Fatal("slow__sleep is not exposed")
		}
		call := func() *mcp.CallToolResult {
			res, err := srv.handler(tool, nil)(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "slow__sleep"}})
			if err != nil {
				return mcp.NewToolResultError(err.Error())
			}
			return res
		}
		first := make(chan *mcp.CallToolResult, 1)
		go func() { first <- call() }()
		<-up.entered

		const grace = 200 * time.Millisecond
		ctx, cancel := context.WithTimeout(t.Context(), grace)
		defer cancel()
		start := time.Now()
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			srv.Drain(ctx)
		}()
		time.Sleep(grace / 4)
		if res := call(); !res.IsError || !strings.Contains(testkit.Text(res), "mcpwarden is shutting down") || !strings.Contains(testkit.Text(res), "not forwarded") {
			t.Errorf("a call while draining: %q, want it refused as shutting down", testkit.Text(res))
		}
		select {
		case <-drained:
		case <-time.After(grace + drain.CancelWait + time.Second):
			t.Fatal("Drain did not return after the grace period")
		}
		if took := time.Since(start); took < grace {
			t.Errorf("Drain returned after %s, before the %s grace period ended", took, grace)
		}
		if cause := <-up.causes; !errors.Is(cause, ErrShuttingDown) {
			t.Errorf("the upstream call's context ended with %v, want ErrShuttingDown", cause)
		}
		res := <-first
		if text := testkit.Text(res); !res.IsError || !strings.HasPrefix(text, "mcpwarden is shutting down") {
			t.Errorf("the call cut at the end of the grace period: %q, want it to say mcpwarden is shutting down", text)
		}
	})
}

func TestDrainLetsCallsFinishWithinGrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, rules.PolicySpec{Default: "allow"}, audit.Config{}, &memorySink{})
	tool, ok := e.srv.Lookup("up__echo")
	if !ok {
		t.Fatal("up__echo is not exposed")
	}
	ctx, leave, ok := e.srv.drain.Enter(t.Context())
	if !ok {
		t.Fatal("entering before Drain was refused")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.srv.Drain(context.WithoutCancel(t.Context())) // no end to the grace period
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("Drain returned with a request in progress")
	default:
	}
	if ctx.Err() != nil {
		t.Errorf("a request in progress within the grace period was cancelled: %v", context.Cause(ctx))
	}
	leave()
	<-done
	if errors.Is(context.Cause(ctx), ErrShuttingDown) {
		t.Errorf("a request that finished within the grace period was cancelled by shutdown")
	}
	res, err := e.srv.handler(tool, nil)(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "up__echo"}})
	if err != nil || !res.IsError {
		t.Errorf("a call after Drain: %v, %v; want it refused", res, err)
	}
}
