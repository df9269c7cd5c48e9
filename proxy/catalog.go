package proxy

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/proxy/toolscreen"
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
	*base
	core      // decides and forwards the catalog's requests
	mu        sync.Mutex
	resources map[string][]mcp.Resource // by server, as listed
	templates map[string][]mcp.ResourceTemplate
	prompts   map[string][]mcp.Prompt

	routes   atomic.Pointer[catalogRoutes] // rebuilt with the registrations
	refreshG sync.WaitGroup                // work started on its own: refreshes from notifications, unsubscribes of ended sessions
	subs     subscribers                   // who is subscribed to the upstreams' resources
}

// catalogRoutes map exposed names back to their server and upstream name.
type catalogRoutes struct {
	uris      map[string]route             // exposed resource URI
	templates map[string]route             // exposed URI template
	prompts   map[string]route             // exposed prompt name
	exposed   map[string]map[string]string // server → upstream URI → exposed URI
	matchers  []templateRoute              // the templates, to route a URI made from one
}

// A templateRoute routes a URI made from an exposed template to its server;
// prefixed says the template was exposed with the "<server>+" prefix.
type templateRoute struct {
	tmpl     *mcp.URITemplate
	server   string
	prefixed bool
}

type route struct{ server, name string }

// refresh re-lists one upstream's resources, templates and prompts
// and re-registers the whole catalog; mcp-go tells clients the lists
// changed. A server that is down keeps what it last listed.
func (cat *catalog) refresh(ctx context.Context, name string) {
	cl, caps, err := cat.ownSession(name)
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
			cat.logger.Warn("listing upstream resources", "server", name, "err", err)
		}
		if res, err := cl.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{}); err == nil {
			templates = res.ResourceTemplates
		} else {
			cat.logger.Debug("listing upstream resource templates", "server", name, "err", err)
		}
	}
	if caps.Prompts != nil {
		if res, err := cl.ListPrompts(ctx, mcp.ListPromptsRequest{}); err == nil {
			prompts = res.Prompts
		} else {
			cat.logger.Warn("listing upstream prompts", "server", name, "err", err)
		}
	}
	if cat.current().policy.HidesSuspiciousTools() {
		resources, templates, prompts = cat.unsuspiciousCatalog(name, resources, templates, prompts)
	}
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if cat.resources == nil {
		cat.resources, cat.templates, cat.prompts = map[string][]mcp.Resource{}, map[string][]mcp.ResourceTemplate{}, map[string][]mcp.Prompt{}
	}
	cat.resources[name], cat.templates[name], cat.prompts[name] = resources, templates, prompts
	cat.register()
}

// refreshLater re-lists a server's catalog off the caller's
// goroutine (an upstream's reader, which must not block).
func (cat *catalog) refreshLater(name string) {
	cat.refreshG.Go(func() { cat.refresh(context.Background(), name) })
}

// register rebuilds the registrations from what every server listed.
// The caller holds cat.mu.
func (cat *catalog) register() {
	servers := slices.Sorted(maps.Keys(cat.resources))
	owners := map[string][]string{} // URI or template → servers offering it
	for _, srv := range servers {
		for _, r := range cat.resources[srv] {
			owners[r.URI] = append(owners[r.URI], srv)
		}
		for _, t := range cat.templates[srv] {
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
	scheme := cat.current().naming
	for _, srv := range servers {
		routes.exposed[srv] = map[string]string{}
		for _, r := range cat.resources[srv] {
			uri := exposedAs(srv, r.URI, len(owners[r.URI]) > 1)
			routes.uris[uri] = route{srv, r.URI}
			routes.exposed[srv][r.URI] = uri
			r.URI = uri
			resources = append(resources, server.ServerResource{Resource: r, Handler: cat.readResource})
		}
		for _, t := range cat.templates[srv] {
			raw := templateText(t)
			if raw == "" {
				continue
			}
			exposed := exposedAs(srv, raw, len(owners["\x00"+raw]) > 1)
			tmpl, err := newTemplate(exposed)
			if err != nil {
				cat.logger.Warn("skipping a resource template", "server", srv, "template", raw, "err", err)
				continue
			}
			routes.templates[exposed] = route{srv, raw}
			routes.matchers = append(routes.matchers, templateRoute{tmpl: tmpl, server: srv, prefixed: exposed != raw})
			t.URITemplate = tmpl
			templates = append(templates, server.ServerResourceTemplate{Template: t, Handler: cat.readTemplated(srv, exposed != raw)})
		}
		for _, p := range cat.prompts[srv] {
			name := scheme.Wire(srv, p.Name)
			if prev, dup := routes.prompts[name]; dup {
				cat.logger.Error("two prompts map to one name; the second is not exposed", "name", name, "first", naming.Canonical(prev.server, prev.name), "second", naming.Canonical(srv, p.Name))
				continue
			}
			routes.prompts[name] = route{srv, p.Name}
			upstreamName := p.Name
			p.Name = name
			prompts = append(prompts, server.ServerPrompt{Prompt: p, Handler: cat.getPrompt(srv, upstreamName)})
		}
	}
	cat.routes.Store(&routes)
	cat.mcp.SetResources(resources...)
	cat.mcp.SetResourceTemplates(templates...)
	cat.mcp.SetPrompts(prompts...)
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
func (cat *catalog) loadRoutes() *catalogRoutes {
	if r := cat.routes.Load(); r != nil {
		return r
	}
	return &catalogRoutes{}
}

// exposedURI is how a client knows an upstream's resource URI.
func (cat *catalog) exposedURI(server, uri string) string {
	if u, ok := cat.loadRoutes().exposed[server][uri]; ok {
		return u
	}
	return uri
}

// unsuspiciousCatalog returns server's resources, templates and prompts
// without those whose definitions look aimed at the model
// (hide_suspicious_tools covers them as it covers tools), logging each one
// it hides. A hidden one is neither listed nor routed.
func (cat *catalog) unsuspiciousCatalog(server string, resources []mcp.Resource, templates []mcp.ResourceTemplate, prompts []mcp.Prompt) ([]mcp.Resource, []mcp.ResourceTemplate, []mcp.Prompt) {
	hide := func(kind, name, why string) bool {
		if why != "" {
			cat.logger.Warn("hiding a "+kind+" whose definition looks aimed at the model", "server", server, "name", name, "why", why)
		}
		return why != ""
	}
	resources = slices.DeleteFunc(slices.Clone(resources), func(r mcp.Resource) bool { return hide("resource", r.URI, toolscreen.Resource(r)) })
	templates = slices.DeleteFunc(slices.Clone(templates), func(t mcp.ResourceTemplate) bool {
		return hide("resource template", templateText(t), toolscreen.ResourceTemplate(t))
	})
	prompts = slices.DeleteFunc(slices.Clone(prompts), func(p mcp.Prompt) bool { return hide("prompt", p.Name, toolscreen.Prompt(p)) })
	return resources, templates, prompts
}
