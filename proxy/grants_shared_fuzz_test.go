package proxy

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzSharedGrantScope feeds the scope of a grant read from the shared
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
		var sc scope
		if err := json.Unmarshal(data, &sc); err != nil {
			if sc.kind != scopeNothing {
				t.Fatalf("a scope that could not be read has kind %v", sc.kind)
			}
			return
		}
		raw, err := json.Marshal(sc)
		if err != nil {
			t.Fatalf("writing back %+v: %v", sc, err)
		}
		var again scope
		if err := json.Unmarshal(raw, &again); err != nil || again.kind != sc.kind || !slices.Equal(again.paths, sc.paths) {
			t.Fatalf("%s read back as %+v (%v), want %+v", raw, again, err, sc)
		}
		// A pathless call is covered only by the tool and all scopes.
		if sc.covers(target{pathless: true, earns: true}) != (sc.kind == scopeTool || sc.kind == scopeAll) {
			t.Fatalf("scope %+v covers a pathless call wrongly", sc)
		}
		// A connection is covered only by a deny of the whole request or
		// a grant of exactly its endpoint.
		conn := target{earns: true, endpoint: "evil.test:443"}
		if sc.covers(conn) != (sc.kind == scopeAll || sc.kind == scopeEndpoint && slices.Contains(sc.paths, conn.endpoint)) {
			t.Fatalf("scope %+v covers a connection to %s wrongly", sc, conn.endpoint)
		}
	})
}
