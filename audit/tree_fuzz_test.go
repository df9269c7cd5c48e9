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

// FuzzFastLineAgreesWithJSON holds fastLine, which reads prev_sha256 and
// the replica off a line without decoding it, to what encoding/json reads
// from the same line whenever the line is JSON: always the same link.
func FuzzFastLineAgreesWithJSON(f *testing.F) {
	f.Add([]byte(`{"time":"2026-01-01T00:00:00Z","event":"decision","id":"ab","replica":"r\"1","prev_sha256":""}`))
	f.Add([]byte(`{"time":"2026-01-01T00:00:00Z","event":"result","id":"a\\","arguments":{"replica":"x"},"prev_sha256":"` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `"}`))
	f.Add([]byte(`{"time":"x","event":"lost","id":"","prev_sha256":"","prev_sha256":"a"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		prev, replica, ok := fastLine(line, nil)
		if !ok || !json.Valid(line) {
			return
		}
		var e struct {
			Prev    *string `json:"prev_sha256"`
			Replica string  `json:"replica"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			return // valid JSON that is not an object of these types
		}
		var id string
		if len(replica) > 0 {
			if err := json.Unmarshal(replica, &id); err != nil {
				t.Fatalf("replica %q of %q does not decode: %v", replica, line, err)
			}
		}
		// encoding/json matches keys case-insensitively and unescaped: a
		// line of another spelling (never one Log writes) may name its
		// replica twice, which only the listing of replicas would show.
		spelt := bytes.Count(bytes.ToLower(line), []byte("replica"))
		oneReplica := spelt <= 1 && spelt == bytes.Count(line, []byte("replica")) && !bytes.Contains(line, []byte(`\u`))
		if e.Prev == nil || *e.Prev != string(prev) || oneReplica && e.Replica != id {
			t.Fatalf("%q: fastLine read prev %q replica %q, encoding/json %v %q", line, prev, id, e.Prev, e.Replica)
		}
	})
}
