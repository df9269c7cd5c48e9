package ask

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzSharedGrantScope feeds the Scope of a grant read from the shared
// state, which another replica (or anyone with access to Redis) wrote:
// reading never panics, a kind it does not know covers nothing, and what
// it reads it writes back the same.
func FuzzSharedGrantScope(f *testing.F) {
	f.Add([]byte(`{"kind":"under","paths":["/srv/app"]}`))
	f.Add([]byte(`{"kind":"exact","paths":["/srv/app/a.txt","/private/srv/app/a.txt"]}`))
	f.Add([]byte(`{"kind":"tool"}`))
	f.Add([]byte(`{"kind":"all"}`))
	f.Add([]byte(`{"kind":"endpoint","paths":["api.github.com:443"]}`))
	f.Add([]byte(`{"kind":"endpoint","paths":["evil.test:443"]}`))
	f.Add([]byte(`{"kind":"everything","paths":["/"]}`))
	f.Add([]byte(`{"kind":3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var sc Scope
		if err := json.Unmarshal(data, &sc); err != nil {
			if sc.Kind != ScopeNothing {
				t.Fatalf("a Scope that could not be read has kind %v", sc.Kind)
			}
			return
		}
		raw, err := json.Marshal(sc)
		if err != nil {
			t.Fatalf("writing back %+v: %v", sc, err)
		}
		var again Scope
		if err := json.Unmarshal(raw, &again); err != nil || again.Kind != sc.Kind || !slices.Equal(again.Paths, sc.Paths) {
			t.Fatalf("%s read back as %+v (%v), want %+v", raw, again, err, sc)
		}
		// A pathless call is covered only by the tool and all scopes.
		if sc.Covers(Target{Pathless: true, Earns: true}) != (sc.Kind == ScopeTool || sc.Kind == ScopeAll) {
			t.Fatalf("Scope %+v covers a pathless call wrongly", sc)
		}
		// A connection is covered only by a deny of the whole request or
		// a grant of exactly its endpoint.
		conn := Target{Earns: true, Endpoint: "evil.test:443"}
		if sc.Covers(conn) != (sc.Kind == ScopeAll || sc.Kind == ScopeEndpoint && slices.Contains(sc.Paths, conn.Endpoint)) {
			t.Fatalf("Scope %+v covers a connection to %s wrongly", sc, conn.Endpoint)
		}
	})
}
