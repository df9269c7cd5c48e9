package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/internal/telemetry"
)

func TestTelemetryKeysLoad(t *testing.T) {
	t.Parallel()
	data := minimal + `
metrics: { listen: "127.0.0.1:9464" }
tracing:
  otlp_endpoint: https://otel.example:4318
  sample_ratio: 0.25
  headers: { X-Api-Key: abc }
`
	cfg, err := Parse([]byte(data), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := telemetry.Config{
		Metrics: telemetry.MetricsConfig{Listen: "127.0.0.1:9464"},
		Tracing: telemetry.TracingConfig{
			OTLPEndpoint: "https://otel.example:4318",
			SampleRatio:  0.25,
			Headers:      map[string]string{"X-Api-Key": "abc"},
		},
	}
	if diff := cmp.Diff(want, cfg.Telemetry); diff != "" {
		t.Errorf("telemetry (-want +got):\n%s", diff)
	}
	if !cfg.Telemetry.Enabled() {
		t.Error("Enabled = false with metrics.listen set")
	}
}

func TestTelemetryKeysComeFromTheEnvironment(t *testing.T) {
	t.Parallel()
	environ := []string{
		"MCPWARDEN_METRICS__LISTEN=127.0.0.1:9464",
		"MCPWARDEN_TRACING__OTLP_ENDPOINT=http://otel-collector:4318",
		"MCPWARDEN_TRACING__INSECURE=true",
	}
	cfg, err := Parse([]byte(minimal), ".yaml", "/cfg", environ)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Telemetry
	if got.Metrics.Listen != "127.0.0.1:9464" || got.Tracing.OTLPEndpoint != "http://otel-collector:4318" || !got.Tracing.Insecure {
		t.Errorf("telemetry = %+v, want the environment's values", got)
	}
}

func TestTelemetryIsOffByDefault(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(minimal), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Telemetry.Enabled() {
		t.Errorf("telemetry enabled without metrics or tracing keys: %+v", cfg.Telemetry)
	}
}

func TestBadTelemetryKeysAreRefusedNamingTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"a metrics listener without a host", "metrics: { listen: \":9464\" }\n", []string{"metrics.listen", "has no host"}},
		{"plain http to a remote collector", "tracing: { otlp_endpoint: \"http://otel-collector:4318\" }\n", []string{"tracing.otlp_endpoint", "tracing.insecure"}},
		{"a sample ratio above 1", "tracing: { otlp_endpoint: \"http://127.0.0.1:4318\", sample_ratio: 2 }\n", []string{"tracing.sample_ratio"}},
		{"a bad header name", "tracing: { otlp_endpoint: \"http://127.0.0.1:4318\", headers: { \"Bad Name\": x } }\n", []string{"tracing.headers"}},
		{"a misspelt metrics key", "metrics: { listn: \"127.0.0.1:9464\" }\n", []string{"metrics.listn: unknown key; did you mean metrics.listen?"}},
		{"a misspelt tracing key", "tracing: { endpoint: \"http://127.0.0.1:4318\" }\n", []string{"tracing.endpoint: unknown key; the keys under tracing are headers, insecure, otlp_endpoint, sample_ratio"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(minimal+tt.data), ".yaml", "/cfg", nil)
			if err == nil {
				t.Fatal("Parse accepted bad telemetry keys")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}
