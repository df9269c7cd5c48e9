package telemetry

import (
	"testing"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
)

// The koanf tags are the config keys; decode them the way internal/config
// does, strictly, with Config squashed into a larger struct.
func TestConfigKeysDecodeWithKoanf(t *testing.T) {
	t.Parallel()
	const file = `
listen: stdio
metrics: { listen: "127.0.0.1:9464" }
tracing:
  otlp_endpoint: http://127.0.0.1:4318
  insecure: true
  sample_ratio: 0.25
  headers: { X-Api-Key: abc }
`
	k := koanf.New(".")
	if err := k.Load(rawbytes.Provider([]byte(file)), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Listen    string `koanf:"listen"`
		Telemetry Config `koanf:",squash"`
	}
	var md mapstructure.Metadata
	err := k.UnmarshalWithConf("", &got, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		Metadata: &md, TagName: "koanf", Result: &got,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Unused) > 0 {
		t.Errorf("unused keys %v", md.Unused)
	}
	c := got.Telemetry
	if c.Metrics.Listen != "127.0.0.1:9464" || c.Tracing.OTLPEndpoint != "http://127.0.0.1:4318" ||
		!c.Tracing.Insecure || c.Tracing.SampleRatio != 0.25 || c.Tracing.Headers["X-Api-Key"] != "abc" {
		t.Errorf("decoded %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
}
