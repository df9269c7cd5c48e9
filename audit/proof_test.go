package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func TestProveALineAndCheckItWithThePublicKeyAlone(t *testing.T) {
	t.Parallel()
	s := newSignedLog(t)
	l := s.open(t, Config{MaxSizeMB: 0})
	for i := range 40 {
		l.Write(context.Background(), decisionEvent(i))
	}
	l.Close()
	files, _ := Files(s.path)
	lines := readLines(t, s.path)
	for _, n := range []int{1, 2, 10, 11, 17, 40, len(lines) - 1} {
		p, err := Prove(files, s.path, n)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		data, _ := json.Marshal(p)
		q, err := ParseProof(data)
		if err != nil {
			t.Fatal(err)
		}
		c, err := q.Check(s.pub)
		if err != nil || q.Text != lines[n-1] || c.Size < int64(n) {
			t.Fatalf("line %d: checkpoint %+v, %v", n, c, err)
		}
		forged := q
		forged.Text = strings.Replace(q.Text, `"time":"2`, `"time":"1`, 1)
		if _, err := forged.Check(s.pub); err == nil {
			t.Errorf("line %d: an edited line passes its proof", n)
		}
		moved := q
		moved.Index = (q.Index + 1) % c.Size
		if _, err := moved.Check(s.pub); err == nil {
			t.Errorf("line %d: the proof passes at another index", n)
		}
		if _, err := q.Check(note.VerifierList(mustVerifier(t, newKey(t).Public))); err == nil {
			t.Errorf("line %d: the proof passes with another key", n)
		}
	}
	if _, err := Prove(files, s.path, len(lines)); err == nil || !strings.Contains(err.Error(), "not covered by a checkpoint yet") {
		t.Errorf("the last checkpoint line: %v, want not covered yet", err)
	}
}

func TestRotationUnderLoadKeepsOneTreeAcrossFiles(t *testing.T) {
	t.Parallel()
	s := newSignedLog(t)
	fs, err := OpenFile(s.path, FileOptions{Fsync: true, MaxBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := OpenFile(s.witness, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewWith(fs, Config{CheckpointEvery: 25}, &Options{Signer: s.key.Signer, Witness: ws})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 40 {
				if err := l.Write(context.Background(), decisionEvent(g*100+i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := s.verify(t)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files < 4 || res.Checkpoints < res.Files-1 || res.Unsigned != 0 {
		t.Errorf("result %+v, want several files, a checkpoint after each rotation (in the next file), all covered", res)
	}
	files, _ := Files(s.path)
	if p, err := Prove(files, files[0], 3); err != nil {
		t.Error(err)
	} else if _, err := p.Check(s.pub); err != nil {
		t.Error(err)
	}
}

// TestKill9UnderLoadThenVerify kills a process writing a signed, synced log
// from many goroutines, repairs the log if its last line was torn, and
// verifies it against the key and the witness: every checkpoint the
// witness holds is over lines the log still has.
func TestKill9UnderLoadThenVerify(t *testing.T) {
	t.Parallel()
	if os.Getenv("MCPWARDEN_AUDIT_KILL_CHILD") != "" {
		t.Skip("the child runs TestAuditKillChild")
	}
	s := newSignedLog(t)
	skey := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(skey, []byte(signerKeyText(t, s)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAuditKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MCPWARDEN_AUDIT_KILL_CHILD="+strings.Join([]string{s.path, s.witness, skey}, "\n"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, _ := os.ReadFile(s.witness); strings.Count(string(data), "\n") >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := Repair(s.path, time.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := s.verify(t)
	if err != nil {
		t.Fatal(err)
	}
	if res.Witnessed == 0 {
		t.Errorf("result %+v: the witness got no checkpoint before the kill", res)
	}
}

// signerKeyText is the private key of s as a key file holds it.
func signerKeyText(t *testing.T, s *signedLog) string {
	t.Helper()
	return s.key.text
}

// TestAuditKillChild is the process TestKill9UnderLoadThenVerify kills.
func TestAuditKillChild(t *testing.T) {
	env := os.Getenv("MCPWARDEN_AUDIT_KILL_CHILD")
	if env == "" {
		t.Skip("run by TestKill9UnderLoadThenVerify")
	}
	parts := strings.Split(env, "\n")
	k, err := LoadSigningKey(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(Config{Path: parts[0], Witness: parts[1], Fsync: true, CheckpointEvery: 20}, &Options{Signer: k.Signer})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				if err := l.Write(context.Background(), decisionEvent(g*1_000_000+i)); err != nil {
					panic(fmt.Sprint("write: ", err))
				}
			}
		})
	}
	wg.Wait()
}

func TestWitnessInsideTheLogFolderIsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		witness string
		wantErr bool
	}{
		{"a file next to the log", "/var/log/mcpwarden/witness.jsonl", true},
		{"a file under the log's folder", "/var/log/mcpwarden/w/witness.jsonl", true},
		{"a file elsewhere", "/var/lib/witness/witness.jsonl", false},
		{"a sibling folder with the log folder's name as prefix", "/var/log/mcpwarden-w/witness.jsonl", false},
		{"stderr", "stderr", false},
		{"an https URL", "https://witness.example/cp", false},
		{"another scheme", "ftp://witness.example/cp", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Config{Path: "/var/log/mcpwarden/audit.jsonl", Witness: tt.witness}.Validate()
			if (err != nil) != tt.wantErr || err != nil && !strings.Contains(err.Error(), "audit.witness") {
				t.Errorf("Validate = %v, want error %v naming audit.witness", err, tt.wantErr)
			}
		})
	}
}

func TestSigningKeyIsMadeOnceWithMode0600(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "audit-signing.key")
	k1, err := LoadSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", info, err)
	}
	k2, err := LoadSigningKey(path)
	if err != nil || k2.Public != k1.Public {
		t.Errorf("second load: %v, %v; want the same key", k2.Public, err)
	}
	if !strings.HasPrefix(k1.Public, KeyName+"+") {
		t.Errorf("public key %q", k1.Public)
	}
	os.Chmod(path, 0o644)
	if _, err := LoadSigningKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key others can read: %v, want refused", err)
	}
	if _, err := ParseVerifierKey("not a key"); err == nil {
		t.Error("ParseVerifierKey took garbage")
	}
}

func TestCheckpointIsWrittenEveryIntervalAndSentToAnHTTPWitness(t *testing.T) {
	t.Parallel()
	got := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- string(body)
	}))
	defer srv.Close()
	s := newSignedLog(t)
	l, err := Open(Config{Path: s.path, Witness: srv.URL, CheckpointInterval: 20 * time.Millisecond}, &Options{Signer: s.key.Signer})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 3 {
		l.Write(context.Background(), decisionEvent(i))
	}
	select {
	case line := <-got:
		if !strings.Contains(line, `"event":"checkpoint"`) || !strings.Contains(line, `mcpwarden/audit\n3\n`) {
			t.Errorf("the witness got %q, want the checkpoint of 3 lines", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no checkpoint reached the witness within 5 s of an interval of 20 ms")
	}
	// Idle, the log gets no checkpoint over the last checkpoint alone,
	// neither every interval nor at Close, nor when reopened and closed.
	time.Sleep(150 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s.write(t, 0)
	if lines := readLines(t, s.path); len(lines) != 4 || !strings.Contains(lines[3], `"event":"checkpoint"`) {
		t.Errorf("the log holds %d lines, want the 3 events and their checkpoint", len(lines))
	}
}

// TestAProofChecksWithNoteAndTlogAlone is what the README promises an
// auditor without mcpwarden: a proof checks with sumdb/note and sumdb/tlog
// alone, its leaf being tlog.RecordHash of the SHA-256 of the line (the
// digest the next line names in prev_sha256), not of the line itself.
func TestAProofChecksWithNoteAndTlogAlone(t *testing.T) {
	t.Parallel()
	s := newSignedLog(t)
	s.write(t, 25)
	files, _ := Files(s.path)
	lines := readLines(t, s.path)
	for _, n := range []int{1, 7, 20} {
		p, err := Prove(files, s.path, n)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		signed, err := note.Open([]byte(p.Checkpoint), s.pub)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		text := strings.Split(signed.Text, "\n") // origin, size, root, ""
		size, err := strconv.ParseInt(text[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		root, err := tlog.ParseHash(text[2])
		if err != nil {
			t.Fatal(err)
		}
		rp := make(tlog.RecordProof, len(p.Hashes))
		for i, h := range p.Hashes {
			if rp[i], err = tlog.ParseHash(h); err != nil {
				t.Fatal(err)
			}
		}
		sum := sha256.Sum256([]byte(p.Text))
		if err := tlog.CheckRecord(rp, size, root, p.Index, tlog.RecordHash(sum[:])); err != nil {
			t.Errorf("line %d: the record hash of the line's SHA-256 is not its leaf: %v", n, err)
		}
		if err := tlog.CheckRecord(rp, size, root, p.Index, tlog.RecordHash([]byte(p.Text))); err == nil {
			t.Errorf("line %d: the record hash of the whole line checks too", n)
		}
		if next := lines[n]; !strings.Contains(next, `"prev_sha256":"`+hex.EncodeToString(sum[:])+`"`) {
			t.Errorf("line %d: the leaf's digest is not the one line %d names in prev_sha256", n, n+1)
		}
	}
}
