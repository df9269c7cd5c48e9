package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// catalogTimeout bounds listing one upstream's resources and prompts.
const catalogTimeout = 30 * time.Second

// A catalog is what the upstreams offer besides tools: resources, resource
// templates and prompts, re-exposed so that each stays unique and routable.
//
// Prompts are named like tools (<server>__<prompt>, or the upstream's name
// with prefix: false). Resource URIs and templates are passed through as
// they are, unless two servers offer the same one: then each becomes
// "<server>+<uri>" (file:///a from fs is fs+file:///a), a URI whose scheme
// names the server, and is turned back before it is forwarded.
type catalog struct {
	mu        sync.Mutex
	resources map[string][]mcp.Resource // by server, as listed
	templates map[string][]mcp.ResourceTemplate
	prompts   map[string][]mcp.Prompt

	routes   atomic.Pointer[catalogRoutes] // rebuilt with the registrations
	refreshG sync.WaitGroup                // refreshes started from notifications
}

// catalogRoutes map exposed names back to their server and upstream name.
type catalogRoutes struct {
	uris      map[string]route             // exposed resource URI
	templates map[string]route             // exposed URI template
	prompts   map[string]route             // exposed prompt name
	exposed   map[string]map[string]string // server → upstream URI → exposed URI
}

type route struct{ server, name string }

// refreshCatalog re-lists one upstream's resources, templates and prompts
// and re-registers the whole catalog; mcp-go tells clients the lists
// changed. A server that is down keeps what it last listed.
func (s *Server) refreshCatalog(ctx context.Context, name string) {
	cl, caps, err := s.upstream.Session(name)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, catalogTimeout)
	defer cancel()
	var (
		resources []mcp.Resource
		templates []mcp.ResourceTemplate
		prompts   []mcp.Prompt
	)
	if caps.Resources != nil {
		if res, err := cl.ListResources(ctx, mcp.ListResourcesRequest{}); err == nil {
			resources = res.Resources
		} else {
			s.logger.Warn("listing upstream resources", "server", name, "err", err)
		}
		if res, err := cl.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{}); err == nil {
			templates = res.ResourceTemplates
		} else {
			s.logger.Debug("listing upstream resource templates", "server", name, "err", err)
		}
	}
	if caps.Prompts != nil {
		if res, err := cl.ListPrompts(ctx, mcp.ListPromptsRequest{}); err == nil {
			prompts = res.Prompts
		} else {
			s.logger.Warn("listing upstream prompts", "server", name, "err", err)
		}
	}
	c := &s.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resources == nil {
		c.resources, c.templates, c.prompts = map[string][]mcp.Resource{}, map[string][]mcp.ResourceTemplate{}, map[string][]mcp.Prompt{}
	}
	c.resources[name], c.templates[name], c.prompts[name] = resources, templates, prompts
	s.registerCatalog()
}

// refreshCatalogLater re-lists a server's catalog off the caller's
// goroutine (an upstream's reader, which must not block).
func (s *Server) refreshCatalogLater(name string) {
	s.catalog.refreshG.Go(func() { s.refreshCatalog(context.Background(), name) })
}

// registerCatalog rebuilds the registrations from what every server
// listed. The caller holds c.mu.
func (s *Server) registerCatalog() {
	c := &s.catalog
	servers := slices.Sorted(maps.Keys(c.resources))
	owners := map[string][]string{} // URI or template → servers offering it
	for _, srv := range servers {
		for _, r := range c.resources[srv] {
			owners[r.URI] = append(owners[r.URI], srv)
		}
		for _, t := range c.templates[srv] {
			if raw := templateText(t); raw != "" {
				owners["\x00"+raw] = append(owners["\x00"+raw], srv)
			}
		}
	}
	exposedAs := func(srv, uri string, collides bool) string {
		if collides {
			return srv + "+" + uri
		}
		return uri
	}
	routes := catalogRoutes{uris: map[string]route{}, templates: map[string]route{}, prompts: map[string]route{}, exposed: map[string]map[string]string{}}
	var resources []server.ServerResource
	var templates []server.ServerResourceTemplate
	var prompts []server.ServerPrompt
	naming := s.settings.Load().naming
	for _, srv := range servers {
		routes.exposed[srv] = map[string]string{}
		for _, r := range c.resources[srv] {
			uri := exposedAs(srv, r.URI, len(owners[r.URI]) > 1)
			routes.uris[uri] = route{srv, r.URI}
			routes.exposed[srv][r.URI] = uri
			r.URI = uri
			resources = append(resources, server.ServerResource{Resource: r, Handler: s.readResource})
		}
		for _, t := range c.templates[srv] {
			raw := templateText(t)
			if raw == "" {
				continue
			}
			exposed := exposedAs(srv, raw, len(owners["\x00"+raw]) > 1)
			tmpl, err := newTemplate(exposed)
			if err != nil {
				s.logger.Warn("skipping a resource template", "server", srv, "template", raw, "err", err)
				continue
			}
			routes.templates[exposed] = route{srv, raw}
			t.URITemplate = tmpl
			templates = append(templates, server.ServerResourceTemplate{Template: t, Handler: s.readTemplated(srv, exposed != raw)})
		}
		for _, p := range c.prompts[srv] {
			name := naming.Wire(srv, p.Name)
			if prev, dup := routes.prompts[name]; dup {
				s.logger.Error("two prompts map to one name; the second is not exposed", "name", name, "first", Canonical(prev.server, prev.name), "second", Canonical(srv, p.Name))
				continue
			}
			routes.prompts[name] = route{srv, p.Name}
			upstreamName := p.Name
			p.Name = name
			prompts = append(prompts, server.ServerPrompt{Prompt: p, Handler: s.getPrompt(srv, upstreamName)})
		}
	}
	c.routes.Store(&routes)
	s.mcp.SetResources(resources...)
	s.mcp.SetResourceTemplates(templates...)
	s.mcp.SetPrompts(prompts...)
}

func templateText(t mcp.ResourceTemplate) string {
	if t.URITemplate == nil || t.URITemplate.Template == nil {
		return ""
	}
	return t.URITemplate.Raw()
}

func newTemplate(raw string) (*mcp.URITemplate, error) {
	quoted, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var t mcp.URITemplate
	if err := t.UnmarshalJSON(quoted); err != nil {
		return nil, err
	}
	return &t, nil
}

// loadRoutes returns the current routes; before any listing, none.
func (c *catalog) loadRoutes() *catalogRoutes {
	if r := c.routes.Load(); r != nil {
		return r
	}
	return &catalogRoutes{}
}

// exposedURI is how a client knows an upstream's resource URI.
func (c *catalog) exposedURI(server, uri string) string {
	if u, ok := c.loadRoutes().exposed[server][uri]; ok {
		return u
	}
	return uri
}

// readResource forwards resources/read of a listed resource.
func (s *Server) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	r, ok := s.catalog.loadRoutes().uris[req.Params.URI]
	if !ok {
		return nil, fmt.Errorf("resource %q is not offered by any upstream", req.Params.URI)
	}
	return s.forwardRead(ctx, r.server, r.name, req)
}

// readTemplated forwards resources/read of a URI made from a template of
// server; prefixed says whether the template was exposed with the server's
// "<server>+" prefix, which is then removed.
func (s *Server) readTemplated(srv string, prefixed bool) server.ResourceTemplateHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		uri := req.Params.URI
		if prefixed {
			uri = strings.TrimPrefix(uri, srv+"+")
		}
		return s.forwardRead(ctx, srv, uri, req)
	}
}

func (s *Server) forwardRead(ctx context.Context, srv, uri string, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	cl, _, err := s.upstream.Session(srv)
	if err != nil {
		return nil, err
	}
	exposed := req.Params.URI
	// A fresh request: the client's own headers and session meta stay here.
	res, err := cl.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{
		URI: uri, Arguments: req.Params.Arguments, Meta: upstreamMeta(req.Params.Meta),
	}})
	if err != nil {
		return nil, err
	}
	if exposed != uri { // give the contents the URI the client asked for
		for i, content := range res.Contents {
			switch c := content.(type) {
			case mcp.TextResourceContents:
				if c.URI == uri {
					c.URI = exposed
				}
				res.Contents[i] = c
			case mcp.BlobResourceContents:
				if c.URI == uri {
					c.URI = exposed
				}
				res.Contents[i] = c
			}
		}
	}
	return res.Contents, nil
}

func (s *Server) getPrompt(srv, name string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		cl, _, err := s.upstream.Session(srv)
		if err != nil {
			return nil, err
		}
		return cl.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{
			Name: name, Arguments: req.Params.Arguments, Meta: upstreamMeta(req.Params.Meta),
		}})
	}
}

// CompletePromptArgument forwards completion/complete for a prompt.
func (s *Server) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	r, ok := s.catalog.loadRoutes().prompts[name]
	if !ok {
		return nil, fmt.Errorf("prompt %q is not offered by any upstream", name)
	}
	return s.complete(ctx, r.server, mcp.PromptReference{Type: "ref/prompt", Name: r.name}, arg, cctx)
}

// CompleteResourceArgument forwards completion/complete for a resource
// template.
func (s *Server) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	routes := s.catalog.loadRoutes()
	r, ok := routes.templates[uri]
	if !ok {
		if r, ok = routes.uris[uri]; !ok {
			return nil, fmt.Errorf("resource %q is not offered by any upstream", uri)
		}
	}
	return s.complete(ctx, r.server, mcp.ResourceReference{Type: "ref/resource", URI: r.name}, arg, cctx)
}

func (s *Server) complete(ctx context.Context, srv string, ref any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	cl, caps, err := s.upstream.Session(srv)
	if err != nil {
		return nil, err
	}
	if caps.Completions == nil {
		return &mcp.Completion{Values: []string{}}, nil
	}
	res, err := cl.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{Ref: ref, Argument: arg, Context: cctx}})
	if err != nil {
		return nil, err
	}
	return &res.Completion, nil
}

// setLevel fans logging/setLevel out to every upstream that logs.
func (s *Server) setLevel(ctx context.Context, _ any, req *mcp.SetLevelRequest) {
	for _, name := range s.upstream.Names() {
		cl, caps, err := s.upstream.Session(name)
		if err != nil || caps.Logging == nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := cl.SetLevel(lctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: req.Params.Level}}); err != nil {
			s.logger.Debug("setting an upstream's log level", "server", name, "err", err)
		}
		cancel()
	}
}

// subscribe forwards resources/subscribe to the upstream that owns the URI.
func (s *Server) subscribe(ctx context.Context, _ any, req *mcp.SubscribeRequest) {
	s.forwardSubscription(ctx, req.Params.URI, func(ctx context.Context, cl subscriber, uri string) error {
		return cl.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}})
	})
}

func (s *Server) unsubscribe(ctx context.Context, _ any, req *mcp.UnsubscribeRequest) {
	s.forwardSubscription(ctx, req.Params.URI, func(ctx context.Context, cl subscriber, uri string) error {
		return cl.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}})
	})
}

type subscriber interface {
	Subscribe(context.Context, mcp.SubscribeRequest) error
	Unsubscribe(context.Context, mcp.UnsubscribeRequest) error
}

func (s *Server) forwardSubscription(ctx context.Context, uri string, do func(context.Context, subscriber, string) error) {
	routes := s.catalog.loadRoutes()
	r, ok := routes.uris[uri]
	if !ok {
		// A URI made from a template: its owner is the server whose
		// prefix it carries, or the only server offering resources.
		for tmpl, tr := range routes.templates {
			if strings.HasPrefix(uri, tr.server+"+") && strings.HasPrefix(tmpl, tr.server+"+") {
				r, ok = route{tr.server, strings.TrimPrefix(uri, tr.server+"+")}, true
				break
			}
		}
	}
	if !ok && len(routes.exposed) == 1 {
		for srv := range routes.exposed {
			r, ok = route{srv, uri}, true
		}
	}
	if !ok {
		return
	}
	cl, caps, err := s.upstream.Session(r.server)
	if err != nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := do(ctx, cl, r.name); err != nil {
		s.logger.Warn("forwarding a resource subscription", "server", r.server, "uri", r.name, "err", err)
	}
}
