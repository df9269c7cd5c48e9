package rules

import "testing"

func TestNamesExactlyOnlyForLiteralAllows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    Spec
		profile string
		args    string
		want    bool
	}{
		{"a literal allow names its host", global(PolicySpec{Allow: []string{"mcp:web:network/connect:host=127.0.0.1"}}), "", `{"host":"127.0.0.1","port":80}`, true},
		{"a literal allow with its port names it for that port", global(PolicySpec{Allow: []string{"mcp:web:network/connect:host=127.0.0.1:port=8080"}}), "", `{"host":"127.0.0.1","port":8080}`, true},
		{"a literal allow with another port does not", global(PolicySpec{Allow: []string{"mcp:web:network/connect:host=127.0.0.1:port=8080"}}), "", `{"host":"127.0.0.1","port":22}`, false},
		{"a literal allow of another host does not", global(PolicySpec{Allow: []string{"mcp:web:network/connect:host=10.0.0.1"}}), "", `{"host":"127.0.0.1","port":80}`, false},
		{"host=* names nothing", global(PolicySpec{Allow: []string{"mcp:web:network/connect:host=*"}}), "", `{"host":"169.254.169.254","port":80}`, false},
		{"a glob over a range names nothing", global(PolicySpec{Allow: []string{"mcp:web:network/connect:host=169.254.*"}}), "", `{"host":"169.254.169.254","port":80}`, false},
		{"a regexp names nothing", global(PolicySpec{Allow: []string{"mcp:web:network/connect:host~=.*"}}), "", `{"host":"127.0.0.1","port":80}`, false},
		{"an allow without a host names nothing", global(PolicySpec{Allow: []string{"mcp:web:network/connect", "mcp:web:*"}}), "", `{"host":"127.0.0.1","port":80}`, false},
		{"a negated literal names nothing", global(PolicySpec{Allow: []string{"mcp:web:network/connect:host!=10.0.0.1"}}), "", `{"host":"127.0.0.1","port":80}`, false},
		{"a literal deny names nothing", global(PolicySpec{Deny: []string{"mcp:web:network/connect:host=127.0.0.1"}}), "", `{"host":"127.0.0.1","port":80}`, false},
		{"another server's literal allow does not", global(PolicySpec{Allow: []string{"mcp:other:network/connect:host=127.0.0.1"}}), "", `{"host":"127.0.0.1","port":80}`, false},
		{"a server gate's literal allow names it", Spec{Servers: map[string]ServerSpec{"web": {Policy: PolicySpec{Allow: []string{"mcp:web:network/connect:host=127.0.0.1"}}}}}, "", `{"host":"127.0.0.1","port":80}`, true},
		{"a profile's literal allow is not read", Spec{Profiles: map[string]PolicySpec{"ci": {Allow: []string{"mcp:web:network/connect:host=127.0.0.1"}}}}, "ci", `{"host":"127.0.0.1","port":80}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustCompile(t, tt.spec)
			c := Call{Server: "web", Tool: "network/connect", Profile: tt.profile, Arguments: decodeArgs(t, tt.args, true)}
			if got := p.NamesExactly(c, "host"); got != tt.want {
				t.Errorf("NamesExactly = %v, want %v", got, tt.want)
			}
		})
	}
}
