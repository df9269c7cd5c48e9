package oauth

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/testop"
)

func TestMatcherPicksTheFirstMatchingProfile(t *testing.T) {
	t.Parallel()
	matches := []ProfileMatch{
		{"admins", Match{Sub: []string{"root-*"}}},
		{"eng", Match{Groups: []string{"eng", "eng-*"}}},
		{"corp-ops", Match{Groups: []string{"ops"}, Email: []string{"*@corp.example"}}},
		{"corp", Match{Email: []string{"*@corp.example", "*@*.corp.example"}}},
	}
	tests := []struct {
		name     string
		fallback string
		id       Identity
		want     string
		wantOK   bool
	}{
		{"A member of eng gets eng.", "", Identity{Subject: "a", Groups: []string{"eng"}}, "eng", true},
		{"A glob over groups matches.", "", Identity{Subject: "a", Groups: []string{"x", "eng-infra"}}, "eng", true},
		{"The first match wins over a later one.", "", Identity{Subject: "root-1", Groups: []string{"eng"}}, "admins", true},
		{"All keys of a match must match.", "", Identity{Subject: "b", Email: "b@other.example", Groups: []string{"ops"}}, "", false},
		{"Groups and email together match.", "", Identity{Subject: "b", Email: "b@corp.example", Groups: []string{"ops"}}, "corp-ops", true},
		{"Email compares without case.", "", Identity{Subject: "c", Email: "Carol@CORP.example"}, "corp", true},
		{"A subdomain glob matches a subdomain.", "", Identity{Subject: "c", Email: "c@eu.corp.example"}, "corp", true},
		{"A look-alike domain does not match.", "", Identity{Subject: "m", Email: "m@corp.example.evil.test"}, "", false},
		{"A domain suffix without its dot does not match.", "", Identity{Subject: "m", Email: "m@evilcorp.example"}, "", false},
		{"Group names compare with case.", "", Identity{Subject: "m", Groups: []string{"ENG"}}, "", false},
		{"An identity without claims matches nothing.", "", Identity{Subject: "m"}, "", false},
		{"An identity matching nothing gets the fallback.", "guest", Identity{Subject: "m"}, "guest", true},
		{"Without a fallback it is refused.", "", Identity{Subject: "m", Groups: []string{"sales"}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := NewMatcher(matches, tt.fallback)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := m.Profile(tt.id)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Profile(%+v) = %q, %v; want %q, %v", tt.id, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestMatcherWithoutMatchesAdmitsEveryoneWithoutAProfile(t *testing.T) {
	t.Parallel()
	m, err := NewMatcher(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m.Profile(Identity{Subject: "a"}); got != "" || !ok {
		t.Errorf("Profile = %q, %v; want no profile, admitted", got, ok)
	}
}

func TestMatcherErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	_, err := NewMatcher([]ProfileMatch{
		{"a", Match{}},
		{"b", Match{Email: []string{"[unclosed"}}},
		{"c", Match{Groups: []string{""}}},
	}, "")
	for _, want := range []string{"profiles.a.match: set at least one", "profiles.b.match.email[0]", "profiles.c.match.groups[0]: empty"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to hold %q", err, want)
		}
	}
}

func TestUnverifiedEmailDoesNotSelectAProfile(t *testing.T) {
	t.Parallel()
	mallory := testop.User{ID: "mallory", Email: "ceo@corp.example", EmailVerified: false, Groups: []string{"sales"}}
	p := testop.Start(t, &testop.Options{Users: []testop.User{mallory}})
	v := newVerifier(t, p, nil, nil)
	id, err := v.Verify(t.Context(), token(t, p, mallory.ID, testop.ClientJWT))
	if err != nil {
		t.Fatal(err)
	}
	if id.Email != "" {
		t.Errorf("email = %q, want an unverified email dropped", id.Email)
	}
	m, err := NewMatcher([]ProfileMatch{{"corp", Match{Email: []string{"*@corp.example"}}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m.Profile(id); ok {
		t.Errorf("an unverified email selected profile %q", got)
	}
}

func TestClaimNamesAreConfigurable(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, func(c *Config) {
		c.Claims = ClaimNames{Subject: "email", Groups: "client_id", Email: "nope"}
	})
	id, err := v.Verify(t.Context(), token(t, p, testop.Alice.ID, testop.ClientJWT))
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != "alice@corp.example" || id.Email != "" || len(id.Groups) != 1 || id.Groups[0] != testop.ClientJWT.ID {
		t.Errorf("identity = %+v, want it read from the configured claims", id)
	}
}

func FuzzIdentityFromClaims(f *testing.F) {
	f.Add(`{"sub":"alice","exp":4102444800,"groups":["eng"],"email":"a@b","scope":"x y"}`)
	f.Add(`{"sub":"","exp":1e300,"nbf":"x","groups":"eng","scp":["a",1]}`)
	f.Add(`{"sub":"a\u0000b","exp":-1}`)
	v, err := New(Config{Issuer: "https://idp.example", Audience: "https://h/mcp"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var claims map[string]any
		if json.Unmarshal([]byte(raw), &claims) != nil {
			return
		}
		id, err := v.identity(claims)
		if err != nil {
			return
		}
		if id.Subject == "" || !printableUTF8(id.Subject) || !printableUTF8(id.Email) {
			t.Fatalf("identity %+v from %s has an unusable subject or email", id, raw)
		}
		for _, g := range id.Groups {
			if g == "" || !printableUTF8(g) {
				t.Fatalf("group %q from %s", g, raw)
			}
		}
	})
}
