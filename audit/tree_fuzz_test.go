package audit

import (
	"bytes"
	"encoding/json"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// FuzzParseCheckpoint parses any text as a checkpoint and any message as a
// signed one: no input panics, what parses formats back to the same text,
// and an unsigned or wrongly signed message never opens with a key.
func FuzzParseCheckpoint(f *testing.F) {
	k := fixedKey(f)
	good, _ := signCheckpoint(Checkpoint{Origin: CheckpointOrigin, Size: 3, Root: [32]byte{1}}, k.Signer)
	f.Add("mcpwarden/audit\n3\nAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", good)
	f.Add("mcpwarden/audit/r1\n01\nx\n", []byte("mcpwarden/audit\n1\n\n— x y\n"))
	f.Add("go.sum database tree\n3\nAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", []byte{})
	verifiers := note.VerifierList(mustVerifierF(k.Public))
	f.Fuzz(func(t *testing.T, text string, msg []byte) {
		if c, err := ParseCheckpoint(text); err == nil && c.text() != text {
			t.Fatalf("%q parses to %+v, which formats as %q", text, c, c.text())
		}
		if c, err := OpenCheckpoint(msg, verifiers); err == nil {
			n, err := note.Open(msg, verifiers)
			if err != nil || n.Text != c.text() {
				t.Fatalf("%q opened as %+v, but its note is %v, %v", msg, c, n, err)
			}
		}
		_, _ = OpenCheckpoint(msg, nil)
	})
}

func mustVerifierF(vkey string) note.Verifier {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil
	}
	return v
}

// fixedKey is a signing key made from a fixed seed, the same in every
// run, so that the corpus stays valid.
func fixedKey(f *testing.F) SigningKey {
	skey, _, err := note.GenerateKey(bytes.NewReader(make([]byte, 64)), KeyName)
	if err != nil {
		f.Fatal(err)
	}
	k, err := ParseSigningKey(skey)
	if err != nil {
		f.Fatal(err)
	}
	return k
}

// FuzzCheckProof checks any proof: none panics, and none but the real one
// passes for the proved line's index and text.
func FuzzCheckProof(f *testing.F) {
	k := fixedKey(f)
	var tr tree
	lines := []string{"a", "b", "c", "d", "e"}
	for _, l := range lines {
		tr.add(sha256Of(l))
	}
	var store hashStore
	for _, l := range lines {
		store.read1(l)
	}
	c := Checkpoint{Origin: CheckpointOrigin, Size: tr.n, Root: tr.root()}
	msg, _ := signCheckpoint(c, k.Signer)
	real, err := proveIndex(&store, c, 2, lines[2], string(msg))
	if err != nil {
		f.Fatal(err)
	}
	data, _ := json.Marshal(real)
	f.Add(data)
	f.Add([]byte(`{"index":-1,"text":"x","proof":[],"checkpoint":"y"}`))
	f.Add([]byte(`{"index":0,"text":"a","proof":["AAAA"],"checkpoint":"mcpwarden/audit\n1\nAA==\n\n— x\n"}`))
	verifiers := note.VerifierList(mustVerifierF(k.Public))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProof(data)
		if err != nil {
			return
		}
		got, err := p.Check(verifiers)
		if err != nil {
			return
		}
		if got.Size == c.Size && got.Root == c.Root && (p.Index >= int64(len(lines)) || p.Text != lines[p.Index]) {
			t.Fatalf("proof of %q at %d passes: %s", p.Text, p.Index, data)
		}
	})
}
