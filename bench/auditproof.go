package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/mcpwarden/mcpwarden/audit"
)

// runAuditProof is the "auditproof" subcommand (issue 36): what the Merkle
// tree and signed checkpoints cost, each against today's hash chain in the
// same run.
//
//   - Write: -events audit events, at -rate events/s, to a file log that
//     only chains (audit.unsigned) and to one that also signs a checkpoint
//     every 1000 events and every second, in pairs of rounds, the order
//     of each pair swapped from one pair to the next; the CPU time
//     (user+sys) the process spends per event, from a collected heap.
//     Printed: the least round of each log, and the median of the pairs'
//     ratios, which the machine's drift cancels out of. -cpuprofile
//     profiles the rounds, each labelled log=chain or log=signed (go tool
//     pprof -tagfocus log=signed).
//
//   - Verify: a log of -gib GiB written with checkpoints, read by today's
//     chain-only check (the verifier before the tree: JSON-decode, hash,
//     link) and by audit verify with the key and the witness; MB/s of each,
//     the best of two reads, after one read to warm the page cache.
//
//     go run ./bench auditproof              # 1 GiB, 10k events/s
//     go run ./bench auditproof -gib 0.1     # a quick run
func runAuditProof(args []string) error {
	fs := flag.NewFlagSet("auditproof", flag.ContinueOnError)
	events := fs.Int("events", 5000, "events per write round")
	rate := fs.Int("rate", 10000, "events per second in the write rounds (0: as fast as possible)")
	rounds := fs.Int("rounds", 20, "write rounds of each log")
	gib := fs.Float64("gib", 1, "size of the log verified, in GiB (0: skip)")
	keep := fs.Bool("keep", false, "keep the temp dir")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the write rounds to `FILE`, each round labelled log=chain or log=signed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mcpwarden-auditproof-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(tmp)
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, audit.KeyName)
	if err != nil {
		return err
	}
	key, err := audit.ParseSigningKey(skey)
	if err != nil {
		return err
	}
	chain, signed, err := writeRounds(tmp, key, *rounds, *events, *rate, *cpuprofile)
	if err != nil {
		return err
	}
	ratios := make([]float64, *rounds)
	for r := range ratios {
		ratios[r] = signed[r] / chain[r]
	}
	slices.Sort(ratios)
	// The least of the rounds: on a shared machine the others' load only
	// ever adds to a round, so the minimum is the closest to the cost. The
	// median ratio of the pairs holds when the load drifts during the run.
	mc, ms := slices.Min(chain), slices.Min(signed)
	pace := fmt.Sprintf("at %d events/s", *rate)
	if *rate <= 0 {
		pace = "unpaced"
	}
	fmt.Printf("| audit write, CPU per event %s | chain only | %.0f ns (least of %d rounds) |\n", pace, mc, *rounds)
	fmt.Printf("| audit write, CPU per event %s | chain + tree + checkpoints | %.0f ns (%+.1f%%; goal ≤ +5%%) |\n", pace, ms, (ms/mc-1)*100)
	fmt.Printf("| audit write, CPU per event %s | ratio of each pair of rounds | median %+.1f%%, quartiles %+.1f%% … %+.1f%% |\n", pace,
		(ratios[len(ratios)/2]-1)*100, (ratios[len(ratios)/4]-1)*100, (ratios[len(ratios)*3/4]-1)*100)
	if *gib <= 0 {
		return nil
	}
	path, witness, err := writeBigLog(tmp, key, int64(*gib*(1<<30)))
	if err != nil {
		return err
	}
	pub, err := audit.ParseVerifierKey(vkey)
	if err != nil {
		return err
	}
	size := fileSize(path)
	if _, err := chainOnly(path); err != nil { // warm the page cache
		return err
	}
	var tChain, tFull time.Duration = 1 << 62, 1 << 62
	for range 2 {
		start := time.Now()
		if _, err := chainOnly(path); err != nil {
			return err
		}
		tChain = min(tChain, time.Since(start))
		start = time.Now()
		w, err := audit.ReadWitnessFile(witness, pub)
		if err != nil {
			return err
		}
		if _, err := audit.VerifyWith(audit.VerifyOptions{Key: pub, Witness: w}, path); err != nil {
			return err
		}
		tFull = min(tFull, time.Since(start))
	}
	mb := float64(size) / 1e6
	fmt.Printf("| audit verify of a %.2f GiB log | chain only (today's check) | %.0f MB/s |\n", float64(size)/(1<<30), mb/tChain.Seconds())
	fmt.Printf("| audit verify of a %.2f GiB log | chain + tree + signatures + witness | %.0f MB/s (%.2f× the chain's time; goal ≥ 200 MB/s) |\n", float64(size)/(1<<30), mb/tFull.Seconds(), tFull.Seconds()/tChain.Seconds())
	return nil
}

// benchEvent is the decision event of one call, as the proxy writes it.
func benchEvent(i int) audit.Event {
	return audit.Event{Event: audit.KindDecision, Session: "s", Client: &audit.Client{Name: "mcpwarden-bench", Version: "1"},
		Server: "bench", Tool: "mcp:bench:echo", WireName: "bench__echo", Decision: "allow", Rule: "mcp:bench:echo",
		GrantedBy: audit.GrantedByRule, Arguments: map[string]any{"message": fmt.Sprintf("hello from mcpwarden bench %d", i)}}
}

// writeRounds runs rounds pairs of write rounds, one of each log, the
// order swapped from one pair to the next, and returns each round's CPU
// time per event in ns; with cpuprofile, it profiles them into that file.
func writeRounds(dir string, key audit.SigningKey, rounds, n, rate int, cpuprofile string) (chain, signed []float64, err error) {
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, nil, err
		}
		defer pprof.StopCPUProfile()
	}
	chain, signed = make([]float64, rounds), make([]float64, rounds)
	for r := range rounds {
		for i := range 2 {
			sign := (r+i)%2 == 1
			ns, err := writeRound(dir, r, sign, key, n, rate)
			if err != nil {
				return nil, nil, err
			}
			if sign {
				signed[r] = ns
			} else {
				chain[r] = ns
			}
		}
	}
	return chain, signed, nil
}

// writeRound writes n events at rate to a new log, signed or not, and
// returns the process CPU time per event in ns.
func writeRound(dir string, round int, sign bool, key audit.SigningKey, n, rate int) (float64, error) {
	cfg := audit.Config{Path: filepath.Join(dir, "logs", fmt.Sprintf("w-%d-%v.jsonl", round, sign))}
	opts := &audit.Options{}
	if sign {
		cfg.CheckpointEvery, cfg.CheckpointInterval, cfg.Witness = 1000, time.Second, filepath.Join(dir, fmt.Sprintf("witness-%d", round), "w.jsonl")
		opts.Signer = key.Signer
	}
	label := "chain"
	if sign {
		label = "signed"
	}
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("log", label))
	pprof.SetGoroutineLabels(ctx) // the checkpoint ticker started by Open inherits the label
	defer pprof.SetGoroutineLabels(context.Background())
	l, err := audit.Open(cfg, opts)
	if err != nil {
		return 0, err
	}
	runtime.GC() // each round pays for its own garbage
	start, cpu0 := time.Now(), selfCPU()
	for i := range n {
		if rate > 0 {
			if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
				time.Sleep(d)
			}
		}
		if err := l.Write(ctx, benchEvent(i)); err != nil {
			return 0, err
		}
	}
	err = l.Close()
	return float64(selfCPU()-cpu0) / float64(n), err
}

// writeBigLog writes a signed log of about size bytes, with its witness.
func writeBigLog(dir string, key audit.SigningKey, size int64) (path, witness string, err error) {
	path, witness = filepath.Join(dir, "logs", "big.jsonl"), filepath.Join(dir, "witness", "big.jsonl")
	l, err := audit.Open(audit.Config{Path: path, Witness: witness}, &audit.Options{Signer: key.Signer})
	if err != nil {
		return "", "", err
	}
	ctx := context.Background()
	for i := 0; ; i++ {
		if i%10000 == 0 && fileSize(path) >= size {
			break
		}
		if err := l.Write(ctx, benchEvent(i)); err != nil {
			return "", "", err
		}
	}
	return path, witness, l.Close()
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// chainOnly is the check audit verify made before the tree: each line
// decoded as JSON for prev_sha256 and replica, hashed, and linked to the
// line before.
func chainOnly(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	prev := ""
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return n - 1, nil
		}
		if err != nil {
			return n, err
		}
		line = line[:len(line)-1]
		var e struct {
			Prev    *string `json:"prev_sha256"`
			Replica string  `json:"replica"`
		}
		if err := json.Unmarshal(line, &e); err != nil || e.Prev == nil || !bytes.Equal([]byte(*e.Prev), []byte(prev)) {
			return n, errors.Join(err, fmt.Errorf("line %d breaks the chain", n))
		}
		sum := sha256.Sum256(line)
		prev = hex.EncodeToString(sum[:])
	}
}
