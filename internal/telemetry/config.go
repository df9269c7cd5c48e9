package telemetry

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
)

// A Config is the metrics and tracing part of an mcpwarden config: the
// top-level keys metrics and tracing. Its zero value turns both off.
// Embed it with `koanf:",squash"`, or embed MetricsConfig and
// TracingConfig as the fields metrics and tracing.
type Config struct {
	Metrics MetricsConfig `koanf:"metrics"`
	Tracing TracingConfig `koanf:"tracing"`
}

// MetricsConfig configures the Prometheus endpoint.
type MetricsConfig struct {
	// Listen is the host:port that serves /metrics, for example
	// "127.0.0.1:9464"; "" (the default) serves nothing. The host must be
	// written out: an empty host would listen on every interface. The
	// endpoint has no authentication, so a non-loopback host (such as
	// 0.0.0.0 for a scraper in a cluster) exposes server and tool names to
	// whoever can reach it.
	Listen string `koanf:"listen"`
}

// TracingConfig configures OpenTelemetry tracing over OTLP/HTTP.
type TracingConfig struct {
	// OTLPEndpoint is the collector's URL, for example
	// "http://127.0.0.1:4318"; "" (the default) turns tracing off. A URL
	// without a path gets the standard /v1/traces. The scheme decides TLS.
	OTLPEndpoint string `koanf:"otlp_endpoint"`
	// Insecure allows a plain http endpoint on a non-loopback host; spans
	// carry tool names, rule texts and upstream error messages, so they are
	// sent in the clear only when asked for. Plain http to a loopback
	// address is always allowed.
	Insecure bool `koanf:"insecure"`
	// SampleRatio is the share of new traces recorded, in [0, 1]; 0 (the
	// default) means 1, all of them. A request whose client sent a sampled
	// trace context is recorded whatever the ratio (parent-based sampling).
	SampleRatio float64 `koanf:"sample_ratio"`
	// Headers are sent with every export, for a collector that wants an API
	// key.
	Headers map[string]string `koanf:"headers"`
}

// DefaultTracesPath is the URL path used when tracing.otlp_endpoint has none.
const DefaultTracesPath = "/v1/traces"

// Enabled reports whether the config turns on metrics or tracing. When it
// does not, the proxy can use a nil *Telemetry, which costs nothing.
func (c Config) Enabled() bool {
	return c.Metrics.Listen != "" || c.Tracing.OTLPEndpoint != ""
}

// Validate returns every problem in c, each naming its key
// ("metrics.listen: ...").
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if l := c.Metrics.Listen; l != "" {
		host, port, err := net.SplitHostPort(l)
		switch {
		case err != nil:
			add("metrics.listen: %q is not host:port (%v)", l, err)
		case host == "":
			add("metrics.listen: %q has no host; write one out, such as 127.0.0.1%s (an empty host listens on every interface)", l, l)
		case port == "":
			add("metrics.listen: %q has no port", l)
		}
	}
	if e := c.Tracing.OTLPEndpoint; e != "" {
		if _, err := c.Tracing.endpoint(); err != nil {
			add("tracing.otlp_endpoint: %w", err)
		}
	}
	if r := c.Tracing.SampleRatio; math.IsNaN(r) || r < 0 || r > 1 {
		add("tracing.sample_ratio: %v is not between 0 and 1", r)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tracing.Headers)) {
		if !validHeaderName(name) {
			add("tracing.headers: %q is not a valid HTTP header name", name)
		}
		if strings.ContainsAny(c.Tracing.Headers[name], "\r\n\x00") {
			add("tracing.headers.%s: the value must not contain a line break or NUL", name)
		}
	}
	return errors.Join(errs...)
}

// endpoint parses and checks OTLPEndpoint, filling in the default path.
func (c TracingConfig) endpoint() (*url.URL, error) {
	u, err := url.Parse(c.OTLPEndpoint)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %w", c.OTLPEndpoint, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q must start with http:// or https://", c.OTLPEndpoint)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%q has no host", c.OTLPEndpoint)
	case u.User != nil:
		return nil, fmt.Errorf("%q must not hold credentials; use tracing.headers", redactURL(u))
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%q must not have a query or fragment", c.OTLPEndpoint)
	case u.Scheme == "http" && !hostport.IsLoopback(u.Hostname()) && !c.Insecure:
		return nil, fmt.Errorf("%q sends spans unencrypted to a non-loopback host; use https, or set tracing.insecure: true", c.OTLPEndpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = DefaultTracesPath
	}
	return u, nil
}

func redactURL(u *url.URL) string {
	v := *u
	v.User = url.User("redacted")
	return v.String()
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return textproto.CanonicalMIMEHeaderKey(name) != ""
}
