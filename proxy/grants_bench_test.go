package proxy

import (
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	stateredis "github.com/mcpwarden/mcpwarden/internal/state/redis"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
)

// BenchmarkStandingGrant measures the lookup of a session grant that
// covers a call: in the embedded store (no state: block), and in a shared
// state in memory and in Redis.
func BenchmarkStandingGrant(b *testing.B) {
	key := ask.GrantKey{Principal: "alice", Tool: "mcp:fs:write_file", Rule: "mcp:fs:write_*"}
	t := ask.Target{Earns: true, Paths: []string{"/srv/app/a.txt"}, Forms: []string{"/srv/app/a.txt"}, Folders: []string{"/srv/app"}}
	sc := ask.ScopeFor(t, state.AllowFolder)
	stores := []struct {
		name string
		open func(b *testing.B) state.Store
	}{
		{"local", func(*testing.B) state.Store { return nil }}, // the embedded store
		{"shared-memory", func(b *testing.B) state.Store {
			s := memory.New()
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"shared-redis", func(b *testing.B) state.Store {
			r := testkit.StartRedis(b)
			s, err := stateredis.Open(b.Context(), stateredis.Options{URL: r.URL(), Poll: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			a := &ask.Asker{Keep: newSessionState(st.open(b)).keeper()} // nil: the embedded store
			sess := a.Waiting.Session("s1")
			if err := a.Keep.Remember(b.Context(), sess, "s1", key, state.AllowSession, sc); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if ans, err := a.Keep.Standing(b.Context(), "s1", key, t); err != nil || ans != state.AllowSession {
					b.Fatalf("standing = %v, %v", ans, err)
				}
			}
		})
	}
}
