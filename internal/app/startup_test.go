package app

import (
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

func TestStartupLogSaysWhyAFirstStartIsSlow(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte("servers:\n  fs:\n    command: npx\n    args: [-y, \"@modelcontextprotocol/server-filesystem\", .]\n  local:\n    command: /usr/bin/my-server\n  remote:\n    url: https://example.com/mcp\n"), ".yaml", "/etc/mcpwarden", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf testkit.LockedBuffer
	logStarting(slog.New(slog.NewTextHandler(&buf, nil)), cfg)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("log = %q, want a line per server", lines)
	}
	for i, want := range []string{
		`msg="starting upstream" server=fs command="npx -y @modelcontextprotocol/server-filesystem ." note="first start downloads the package"`,
		`msg="starting upstream" server=local command=/usr/bin/my-server`,
		`msg="connecting to upstream" server=remote url=https://example.com/mcp`,
	} {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("line %d = %q, want it to end in %q", i, lines[i], want)
		}
	}
}

// TestReadyLineSaysStartingNotDown: a server still on its first start when
// startup_wait has passed (an npx server downloading its package) is
// reported starting, apart from one whose start failed (issue 37).
func TestReadyLineSaysStartingNotDown(t *testing.T) {
	t.Parallel()
	held := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	s := testkit.NewStandIn()
	s.AddTool(mcp.NewTool("echo"), testkit.Echo)
	slow := s.URL(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-held:
			case <-r.Context().Done():
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	st := setupOf(t, "servers:\n  slow:\n    url: "+slow+"\n  gone:\n    url: "+closed+"\n  up:\n    url: "+standIn(t)+"\naudit:\n  path: audit.jsonl\n")
	var buf testkit.LockedBuffer
	a, err := Start(t.Context(), st, Options{Version: "test", Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer release() // first: Close waits for the slow server's attempt
	testkit.Eventually(t, 10*time.Second, "up is up and gone has failed its first start", func() bool {
		return a.pool.Err("up") == nil && a.pool.Err("gone") != nil && !startingNow(a.pool.Err("gone"))
	})
	a.logSummary()
	want := "servers_up=[up] servers_starting=[slow] servers_down=[gone]"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, buf.String())
	}
}

func TestAskWarningSaysWhenNoOneCanAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want string // "" = no warning
	}{
		{"the default asks and no page", "", "only a client that shows MCP elicitation forms can answer"},
		{"an approvals page answers", "ask: { approvals: local }\n", ""},
		{"a resolver answers", "ask: { resolver: { command: [/bin/true] } }\n", ""},
		{"elicitation off and no page", "ask: { elicitation: false }\n", "no one can answer"},
		{"a policy that never asks", "policy: { default: deny, allow: [\"mcp:fs:*\"] }\n", ""},
		{"a policy that denies by default never asks", "policy: { default: deny }\nask: { elicitation: false }\n", ""},
		{"a server's ask rule asks", "    policy: { ask: [\"mcp:fs:write\"] }\npolicy: { default: deny }\n", "only a client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Parse([]byte("servers:\n  fs:\n    command: /usr/bin/fs\n"+tt.yaml), ".yaml", "/etc/mcpwarden", nil)
			if err != nil {
				t.Fatal(err)
			}
			got := askWarning(cfg)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("askWarning = %q, want %q", got, tt.want)
			}
			if got != "" && !strings.Contains(got, "ask.approvals: local") {
				t.Errorf("askWarning = %q: it does not say what to write", got)
			}
		})
	}
}

// TestSecondInstanceStartsItsApprovalsPageElsewhere: every stdio session of
// a client starts its own mcpwarden; with ask.approvals: local (which
// import writes) the second must not fail to start because the first has
// the page's usual port.
func TestSecondInstanceStartsItsApprovalsPageElsewhere(t *testing.T) {
	t.Parallel()
	first, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	taken := first.Addr().String()
	var buf testkit.LockedBuffer
	ln, err := listenApprovals("", taken, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatalf("with the usual port taken: %v", err)
	}
	defer ln.Close()
	if ln.Addr().String() == taken || !strings.HasPrefix(ln.Addr().String(), "127.0.0.1:") {
		t.Errorf("listening on %s, want another loopback port", ln.Addr())
	}
	if !strings.Contains(buf.String(), "ask.approvals_listen") {
		t.Errorf("no warning that says what to set: %q", buf.String())
	}
	// An address the config names is not swapped for another.
	if ln, err := listenApprovals(taken, "127.0.0.1:0", slog.New(slog.DiscardHandler)); err == nil {
		ln.Close()
		t.Error("a configured address that is taken was swapped for another")
	}
}

func TestStartupLogWarnsWhereShadowModeIsOn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config string
		want         string // "" = no line
	}{
		{"off says nothing", "servers:\n  fs: {url: https://example.com/mcp}\n", ""},
		{"on for one server names it", "servers:\n  fs: {url: https://example.com/mcp, enforce: shadow}\n  gh: {url: https://example.com/mcp}\n",
			`level=WARN msg="shadow mode is on (enforce: shadow): what the policy would ask about or deny is audited with shadow: true and forwarded, nobody asked; built-in refusals still refuse" servers=[fs] profiles=[]`},
		{"on globally names every server and profile", "enforce: shadow\nservers:\n  fs: {url: https://example.com/mcp}\nprofiles:\n  ci: {}\n",
			`servers=[fs] profiles=[ci]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Parse([]byte(tt.config), ".yaml", t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			st, err := NewSetup(cfg, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			var buf testkit.LockedBuffer
			logShadow(slog.New(slog.NewTextHandler(&buf, nil)), st.Policy)
			got := strings.TrimSpace(buf.String())
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("log = %q, want %q", got, tt.want)
			}
		})
	}
}
