package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/internal/testop"
)

// carol is a third user of the test provider, in eng like alice.
var carol = testop.User{ID: "carol", Email: "carol@corp.example", EmailVerified: true, Groups: []string{"eng"}}

// TestOIDCUsersGetChildrenOfTheirOwnCappedAndReaped: mcpwarden is an OAuth
// resource server in front of stateserver isolated per principal. Alice
// and bob, users of a real OpenID provider in different groups and so
// different profiles, each get a child process with its own state, named
// by their OIDC principal in the audit log; carol, a third user, is
// refused while isolation_max children run; once the idle ones are reaped
// she gets a new child.
func TestOIDCUsersGetChildrenOfTheirOwnCappedAndReaped(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, &testop.Options{Users: []testop.User{carol}})
	f, mark := isolatedFixture(t, "per_principal", "    isolation_max: 2\n    isolation_idle_timeout: 3s\n")
	f.appendConfig(t, fmt.Sprintf(`auth:
  oauth:
    issuer: %q
    audience: %q
profiles:
  eng:
    servers: [state]
    match: {groups: [eng]}
  ops:
    servers: [state]
    match: {groups: [ops]}
`, p.Issuer, testop.Resource))
	url, _ := startHTTP(t, f)
	token := func(user string) string {
		tok, err := p.Token(t.Context(), user, testop.ClientJWT)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	alice, bob := connectAs(t, url, token(testop.Alice.ID)), connectAs(t, url, token(testop.Bob.ID))
	alicePID, bobPID := separate(t, alice, bob)
	if n := len(marked(mark)); n != 3 {
		t.Errorf("%d stateserver processes, want 3: the template and one child per user", n)
	}

	carolClient := connectAs(t, url, token(carol.ID))
	if res := callTool(t, carolClient, "state__recall", map[string]any{}); !res.IsError || !strings.Contains(testkit.Text(res), "isolation_max") {
		t.Errorf("carol's call beyond the cap: %q, want an error naming isolation_max", testkit.Text(res))
	}
	testkit.Eventually(t, 20*time.Second, "alice's and bob's idle children to be reaped", func() bool { return len(marked(mark)) == 1 })
	carolPID, got := state(t, carolClient, "recall", "")
	if carolPID == alicePID || carolPID == bobPID || got != "" {
		t.Errorf("carol got pid %s value %q, want a new child of her own", carolPID, got)
	}

	byPrincipal := instances(t, f.auditPath)
	var principals []string
	for principal, names := range byPrincipal {
		principals = append(principals, principal)
		for _, name := range names {
			if name == "" && strings.HasSuffix(principal, ":"+carol.ID) {
				continue // her call refused at the cap had no child
			}
			if !strings.HasPrefix(name, "principal:"+principal+"#") {
				t.Errorf("a result of %s names instance %q", principal, name)
			}
		}
	}
	for _, user := range []string{testop.Alice.ID, testop.Bob.ID, carol.ID} {
		if !slices.ContainsFunc(principals, func(p string) bool { return strings.HasPrefix(p, "oidc:") && strings.HasSuffix(p, ":"+user) }) {
			t.Errorf("no result names %s's OIDC principal; the principals are %q", user, principals)
		}
	}
}
