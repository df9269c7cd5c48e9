package approvals

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/httpserve"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/textcut"
)

//go:embed page
var pageFS embed.FS

// The approvals API, below the page at /.
const (
	pathState  = "/api/asks"   // GET: the Snapshot as JSON
	pathEvents = "/api/events" // GET: server-sent events, one "state" event per change
	pathDecide = "/api/asks/"  // POST /api/asks/{id}: {"decision": ..., "via": ..., "who": ...}
)

// heartbeat is how often an idle event stream gets a comment line, so that
// a dead connection is noticed.
const heartbeat = 15 * time.Second

// maxWho bounds the free text naming who decided.
const maxWho = 64

// NewToken returns a new random page token: 26 base32 characters, 130 bits.
func NewToken() string { return rand.Text() }

// LoopbackHosts returns the Host header values a loopback listener on port
// answers to: 127.0.0.1, localhost and [::1] with that port. Any other
// Host is refused, which defeats DNS rebinding.
func LoopbackHosts(port int) []string {
	p := strconv.Itoa(port)
	return []string{net.JoinHostPort("127.0.0.1", p), net.JoinHostPort("localhost", p), net.JoinHostPort("::1", p)}
}

// HandlerOptions configure the approvals page's handler. Token and Hosts
// are required.
type HandlerOptions struct {
	// Token must be presented by every request but the static files: as
	// "Authorization: Bearer <token>" (the API, the CLI), or, on GET only,
	// as ?token= in the URL (the page and its event stream, which a
	// browser cannot give headers).
	Token string
	// Hosts are the accepted Host header values, host:port (see
	// LoopbackHosts).
	Hosts []string
}

// NewHandler returns the approvals page and its API for b. Every request
// must name an accepted Host and, when it has an Origin, come from the
// page's own origin. A decision (POST) must carry the token in the
// Authorization header — which a cross-site form or a simple cross-origin
// request cannot set, so the token doubles as the CSRF token — a JSON body,
// and pass net/http's CrossOriginProtection (Sec-Fetch-Site). Responses
// forbid framing, referrers, caching and any script but the page's own.
func NewHandler(b *Broker, o HandlerOptions) (http.Handler, error) {
	if o.Token == "" || len(o.Hosts) == 0 {
		return nil, errors.New("approvals: Token and Hosts are required")
	}
	static, err := fs.Sub(pageFS, "page")
	if err != nil {
		return nil, err
	}
	h := &handler{broker: b, token: []byte(o.Token), hosts: map[string]bool{}}
	for _, host := range o.Hosts {
		h.hosts[strings.ToLower(host)] = true
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.Handle("GET /{$}", h.authorized(true, http.HandlerFunc(h.page)))
	mux.Handle("GET "+pathState, h.authorized(false, http.HandlerFunc(h.state)))
	mux.Handle("GET "+pathEvents, h.authorized(true, http.HandlerFunc(h.events)))
	csrf := http.NewCrossOriginProtection()
	mux.Handle("POST "+pathDecide+"{id}", csrf.Handler(h.authorized(false, http.HandlerFunc(h.decide))))
	return h.guard(mux), nil
}

type handler struct {
	broker *Broker
	token  []byte
	hosts  map[string]bool
}

// guard checks Host and Origin on every request and sets the security
// headers on every response.
func (h *handler) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		hdr.Set("X-Frame-Options", "DENY")
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Referrer-Policy", "no-referrer")
		hdr.Set("Cache-Control", "no-store")
		hdr.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !h.hosts[strings.ToLower(r.Host)] {
			http.Error(w, "unexpected Host header", http.StatusForbidden)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !strings.EqualFold(origin, "http://"+r.Host) {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized lets through requests that carry the token; inURL also
// accepts it as the token query parameter.
func (h *handler) authorized(inURL bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok && inURL {
			got = r.URL.Query().Get("token")
		}
		if subtle.ConstantTimeCompare([]byte(got), h.token) != 1 {
			http.Error(w, "missing or wrong approvals token: open the link mcpwarden printed on stderr at start", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	http.ServeFileFS(w, r, pageFS, "page/index.html")
}

func (h *handler) state(w http.ResponseWriter, r *http.Request) {
	s, _, err := h.broker.SnapshotContext(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "mcpwarden cannot reach its shared state (state.url) to list the asks of every replica")
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// events streams the state as server-sent events: one "state" event at
// once and one after every change, until the client goes, the server
// shuts down (the request's context) or the broker closes.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	// With shared state, asks listed and answered on other replicas are
	// looked for every SharedPoll; a state that did not change is not sent
	// again.
	var poll <-chan time.Time
	if h.broker.Shared() {
		pt := time.NewTicker(SharedPoll)
		defer pt.Stop()
		poll = pt.C
	}
	var last []byte
	for {
		s, changed, err := h.broker.SnapshotContext(r.Context())
		if err != nil {
			if _, err := fmt.Fprint(w, "event: unavailable\ndata: {\"error\":\"mcpwarden cannot reach its shared state\"}\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		} else {
			data, err := json.Marshal(s)
			if err != nil {
				return
			}
			if !bytes.Equal(data, last) {
				if _, err := fmt.Fprintf(w, "event: state\ndata: %s\n\n", data); err != nil || rc.Flush() != nil {
					return
				}
				last = data
			}
		}
		for idle := true; idle; {
			select {
			case <-changed:
				idle = false
			case <-poll:
				idle = false
			case <-tick.C:
				if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
					return
				}
			case <-r.Context().Done():
				return
			case <-h.broker.Done():
				return
			}
		}
	}
}

// decideBody is what POST /api/asks/{id} takes.
type decideBody struct {
	Decision string `json:"decision"`
	Via      string `json:"via"` // "page" (default) or "cli"
	Who      string `json:"who"`
}

func (h *handler) decide(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "the body must be application/json")
		return
	}
	var body decideBody
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "bad body: "+err.Error())
		return
	}
	a, err := ParseAnswer(body.Decision)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	via, who := ViaPage, "approvals page"
	switch body.Via {
	case "", "page":
	case "cli":
		via, who = ViaCLI, "mcpwarden approve"
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("via %q is not page or cli", body.Via))
		return
	}
	if body.Who != "" {
		who = cut(body.Who, maxWho)
	}
	id := r.PathValue("id")
	if err := h.broker.DecideContext(r.Context(), id, a, via, who); err != nil {
		status := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrUnknownAsk):
			status = http.StatusNotFound
		case errors.Is(err, state.ErrUnavailable):
			status = http.StatusServiceUnavailable
		case errors.Is(err, ErrAnswerNotTaken):
			status = http.StatusGatewayTimeout
		}
		writeError(w, status, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id, "decision": a.String()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// cut shortens s to at most n bytes on a rune boundary, dropping control
// characters.
func cut(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	return textcut.HeadBytes(s, n)
}

// Serve serves h on ln until ctx is done, then shuts down. Open event
// streams end with ctx, since every request's context derives from it.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	served, err := httpserve.Run(ctx, srv, ln, 5*time.Second, nil)
	if served != nil {
		return fmt.Errorf("serving the approvals page: %w", served)
	}
	if err != nil {
		return fmt.Errorf("shutting down the approvals page: %w", err)
	}
	return nil
}
