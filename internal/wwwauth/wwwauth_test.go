package wwwauth

import (
	"testing"
)

func TestParseReadsTheBearerChallenge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []string
		want   Challenge
	}{
		{"no header", nil, Challenge{}},
		{"a bare Bearer", []string{"Bearer"}, Challenge{}},
		{"quoted parameters", []string{`Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="read write"`},
			Challenge{ResourceMetadata: "https://a.example/.well-known/oauth-protected-resource/mcp", Scope: "read write"}},
		{"token parameters", []string{`Bearer error=insufficient_scope, scope=read`}, Challenge{Scope: "read", Error: ErrorInsufficientScope}},
		{"names are case-insensitive", []string{`bearer SCOPE="a", Error="invalid_token"`}, Challenge{Scope: "a", Error: "invalid_token"}},
		{"escapes in quoted strings", []string{`Bearer scope="a \"b\" \\c"`}, Challenge{Scope: `a "b" \c`}},
		{"a comma inside quotes", []string{`Bearer error_description="no, never", scope="x"`}, Challenge{Scope: "x"}},
		{"Bearer after another scheme in one value", []string{`Basic realm="r", Bearer scope="s"`}, Challenge{Scope: "s"}},
		{"Bearer in a second header value", []string{`Basic realm="r"`, `Bearer scope="s"`}, Challenge{Scope: "s"}},
		{"the first of a repeated parameter", []string{`Bearer scope="first", scope="second"`}, Challenge{Scope: "first"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Parse(tt.values); got != tt.want {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.values, got, tt.want)
			}
		})
	}
}

func TestAnotherSchemesParametersAreNotTakenForBearers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []string
	}{
		{"Basic before Bearer", []string{`Basic scope="admin", error="insufficient_scope", Bearer realm="r"`}},
		{"Basic after Bearer", []string{`Bearer realm="r", Basic scope="admin", error="insufficient_scope"`}},
		{"no Bearer at all", []string{`DPoP scope="admin", error="insufficient_scope"`}},
		{"a scheme named like Bearer", []string{`Bearerx scope="admin", error="insufficient_scope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Parse(tt.values); got.Scope != "" || got.Error != "" {
				t.Errorf("Parse(%q) = %+v: another scheme's parameters were read as the Bearer challenge's", tt.values, got)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="https://a/x", scope="a b"`,
		`Basic realm="r", Bearer error=insufficient_scope`,
		`Bearer scope="a \"b\"`, `Bearer ==`, `,,,Bearer,,scope=,`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		a, b := Parse([]string{v}), Parse([]string{v})
		if a != b {
			t.Fatalf("Parse is not deterministic on %q", v)
		}
	})
}
