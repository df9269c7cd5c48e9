package rules

import (
	"bytes"
	"encoding/json"
	"testing"
)

// mustCompile compiles s or fails the test.
func mustCompile(t testing.TB, s Spec) *Policy {
	t.Helper()
	p, err := Compile(s)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return p
}

// global is a Spec with only a global gate.
func global(p PolicySpec) Spec { return Spec{Global: p} }

// decodeArgs decodes a JSON object, with UseNumber when useNumber is set.
func decodeArgs(t testing.TB, s string, useNumber bool) map[string]any {
	t.Helper()
	if s == "" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	if useNumber {
		d.UseNumber()
	}
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return m
}

// decideBoth decides c with the arguments decoded both with and without
// UseNumber, fails the test if the two verdicts differ, and returns one.
func decideBoth(t testing.TB, p *Policy, c Call, args string) Verdict {
	t.Helper()
	c.Arguments = decodeArgs(t, args, false)
	got := p.Decide(c)
	c.Arguments = decodeArgs(t, args, true)
	if other := p.Decide(c); other != got {
		t.Fatalf("Decide differs by decoder for %s:\nfloat64:    %+v\njson.Number: %+v", args, got, other)
	}
	return got
}

func jsonNumber(s string) json.Number { return json.Number(s) }
