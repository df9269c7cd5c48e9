package proxy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/upstream"
)

// The handlers of the catalog's requests: resources/read (of a listed
// resource or of a URI made from a template), prompts/get,
// completion/complete, resources/subscribe and unsubscribe and
// logging/setLevel. Each is decided as mcp:<server>:<method> by
// cat.request before anything reaches the upstream.

// subscribeTimeout bounds forwarding a subscription.
const subscribeTimeout = 10 * time.Second

// readResource forwards resources/read of a listed resource.
func (cat *catalog) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	r, ok := cat.loadRoutes().uris[req.Params.URI]
	if !ok {
		return nil, fmt.Errorf("resource %q is not offered by any upstream", req.Params.URI)
	}
	return cat.read(ctx, r.server, r.name, req)
}

// readTemplated forwards resources/read of a URI made from a template of
// server; prefixed says whether the template was exposed with the server's
// "<server>+" prefix, which is then removed.
func (cat *catalog) readTemplated(srv string, prefixed bool) server.ResourceTemplateHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		uri := req.Params.URI
		if prefixed {
			uri = strings.TrimPrefix(uri, srv+"+")
		}
		return cat.read(ctx, srv, uri, req)
	}
}

// read decides and forwards resources/read of uri from srv. The upstream
// gets the URI and the client's _meta, nothing else: the template
// variables mcp-go matched, or arguments a client added, are not part of
// MCP's resources/read and are not forwarded.
func (cat *catalog) read(ctx context.Context, srv, uri string, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	exposed := req.Params.URI
	c := cat.newRequest(ctx, srv, mcp.MethodResourcesRead, exposed, map[string]any{"uri": uri})
	res, err := cat.request(ctx, c, askHuman, func(ctx context.Context, cl *client.Client, _ mcp.ServerCapabilities) (any, error) {
		// A fresh request: the client's own headers and session meta stay here.
		return cl.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{
			URI: uri, Meta: upstreamMeta(req.Params.Meta),
		}})
	})
	if err != nil {
		return nil, err
	}
	contents := res.(*mcp.ReadResourceResult).Contents
	if exposed != uri { // give the contents the URI the client asked for
		for i, content := range contents {
			switch c := content.(type) {
			case mcp.TextResourceContents:
				if c.URI == uri {
					c.URI = exposed
				}
				contents[i] = c
			case mcp.BlobResourceContents:
				if c.URI == uri {
					c.URI = exposed
				}
				contents[i] = c
			}
		}
	}
	return contents, nil
}

// getPrompt forwards prompts/get of server's prompt name.
func (cat *catalog) getPrompt(srv, name string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		params := map[string]any{"name": name}
		if req.Params.Arguments != nil {
			args := make(map[string]any, len(req.Params.Arguments))
			for k, v := range req.Params.Arguments {
				args[k] = v
			}
			params["arguments"] = args
		}
		c := cat.newRequest(ctx, srv, mcp.MethodPromptsGet, req.Params.Name, params)
		res, err := cat.request(ctx, c, askHuman, func(ctx context.Context, cl *client.Client, _ mcp.ServerCapabilities) (any, error) {
			return cl.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{
				Name: name, Arguments: req.Params.Arguments, Meta: upstreamMeta(req.Params.Meta),
			}})
		})
		if err != nil {
			return nil, err
		}
		return res.(*mcp.GetPromptResult), nil
	}
}

// CompletePromptArgument forwards completion/complete for a prompt.
func (cat *catalog) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	r, ok := cat.loadRoutes().prompts[name]
	if !ok {
		return nil, fmt.Errorf("prompt %q is not offered by any upstream", name)
	}
	ref := map[string]any{"type": "ref/prompt", "name": r.name}
	return cat.complete(ctx, r.server, name, ref, mcp.PromptReference{Type: "ref/prompt", Name: r.name}, arg, cctx)
}

// CompleteResourceArgument forwards completion/complete for a resource
// template.
func (cat *catalog) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	routes := cat.loadRoutes()
	r, ok := routes.templates[uri]
	if !ok {
		if r, ok = routes.uris[uri]; !ok {
			return nil, fmt.Errorf("resource %q is not offered by any upstream", uri)
		}
	}
	ref := map[string]any{"type": "ref/resource", "uri": r.name}
	return cat.complete(ctx, r.server, uri, ref, mcp.ResourceReference{Type: "ref/resource", URI: r.name}, arg, cctx)
}

// complete decides and forwards completion/complete; refParams is ref as
// the rules see it, upstreamRef as it is sent.
func (cat *catalog) complete(ctx context.Context, srv, exposed string, refParams map[string]any, upstreamRef any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	params := map[string]any{
		"ref":      refParams,
		"argument": map[string]any{"name": arg.Name, "value": arg.Value},
	}
	if len(cctx.Arguments) > 0 {
		args := make(map[string]any, len(cctx.Arguments))
		for k, v := range cctx.Arguments {
			args[k] = v
		}
		params["context"] = map[string]any{"arguments": args}
	}
	c := cat.newRequest(ctx, srv, mcp.MethodCompletionComplete, exposed, params)
	res, err := cat.request(ctx, c, askHuman, func(ctx context.Context, cl *client.Client, caps mcp.ServerCapabilities) (any, error) {
		if caps.Completions == nil {
			return &mcp.CompleteResult{Completion: mcp.Completion{Values: []string{}}}, nil
		}
		return cl.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{Ref: upstreamRef, Argument: arg, Context: cctx}})
	})
	if err != nil {
		return nil, err
	}
	return &res.(*mcp.CompleteResult).Completion, nil
}

// setLevel fans logging/setLevel out to every upstream that logs and
// whose mcp:<server>:logging/setLevel an allow rule forwards (it is never
// asked). It cannot refuse the client's request, which mcp-go answers
// itself; a server it is not forwarded to keeps its level.
func (cat *catalog) setLevel(ctx context.Context, _ any, req *mcp.SetLevelRequest) {
	for _, name := range cat.upstream.Names() {
		c := cat.newRequest(ctx, name, mcp.MethodSetLogLevel, name, map[string]any{"level": string(req.Params.Level)})
		_, err := cat.request(ctx, c, askNever, func(ctx context.Context, cl *client.Client, caps mcp.ServerCapabilities) (any, error) {
			if caps.Logging == nil {
				return nil, nil
			}
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return nil, cl.SetLevel(lctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: req.Params.Level}})
		})
		if err != nil {
			cat.logger.Debug("setting an upstream's log level", "server", name, "err", err)
		}
	}
}

// subscription decides and forwards resources/subscribe or unsubscribe of
// uri, as the client knows it, for subscriber (the client session, or
// listenSubscriber). Both are decided as mcp:<server>:resources/subscribe
// (a rule about subscribing covers unsubscribing; the audit's method
// tells them apart). A URI no upstream offers is refused. The upstream's
// subscription is shared by every client of its session (subscribers):
// it is subscribed to for the first and unsubscribed from when the last
// unsubscribes.
func (cat *catalog) subscription(ctx context.Context, method mcp.MCPMethod, uri, subscriber string) error {
	r, err := cat.routeURI(uri)
	if err != nil {
		return err
	}
	c := cat.newRequest(ctx, r.server, mcp.MethodResourcesSubscribe, uri, map[string]any{"uri": r.name})
	c.method = method
	_, err = cat.request(ctx, c, askHuman, func(ctx context.Context, cl *client.Client, caps mcp.ServerCapabilities) (any, error) {
		if caps.Resources == nil || !caps.Resources.Subscribe {
			return nil, nil // nothing to forward: the server sends no updates
		}
		ctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
		defer cancel()
		k := subscribed{upstream: cl, uri: r.name}
		if method == mcp.MethodResourcesUnsubscribe {
			if !cat.subs.remove(k, subscriber) {
				return nil, nil // another client is still subscribed
			}
			return nil, cl.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: r.name}})
		}
		if !cat.subs.add(k, r.server, upstream.Route{Principal: c.principal, Session: c.session}, subscriber) {
			return nil, nil // subscribed already, for another client
		}
		if err := cl.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: r.name}}); err != nil {
			cat.subs.remove(k, subscriber)
			return nil, err
		}
		return nil, nil
	})
	return err
}

// routeURI finds the server and upstream URI behind a URI a client uses: a
// listed resource, else the one template that matches it. A URI no
// template matches, or that templates of two servers match, is refused.
func (cat *catalog) routeURI(uri string) (route, error) {
	routes := cat.loadRoutes()
	if r, ok := routes.uris[uri]; ok {
		return r, nil
	}
	var found []route
	for _, m := range routes.matchers {
		if !m.tmpl.Regexp().MatchString(uri) {
			continue
		}
		r := route{m.server, uri}
		if m.prefixed {
			r.name = strings.TrimPrefix(uri, m.server+"+")
		}
		if len(found) == 0 || found[0].server != r.server {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return route{}, fmt.Errorf("resource %q is not offered by any upstream", uri)
	case 1:
		return found[0], nil
	default:
		return route{}, fmt.Errorf("resource %q matches templates of servers %q and %q; use the URI with its server's prefix", uri, found[0].server, found[1].server)
	}
}
