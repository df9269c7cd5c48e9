package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// reflectEncode is the encoding appendEvent replaced: encoding/json's
// Encoder without HTML escaping, cut before prev_sha256's empty value. It
// is the reference the tests hold appendEvent to, and the baseline of
// BenchmarkEncodeEvent.
func reflectEncode(e *Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	body, ok := bytes.CutSuffix(buf.Bytes(), []byte(`""}`+"\n"))
	if !ok {
		return nil, errPrevNotLast
	}
	return body, nil
}

var errPrevNotLast = &json.UnsupportedValueError{Str: "prev_sha256 is not the last field"}

// checkSameEncoding fails unless appendEvent and encoding/json agree on e:
// the same bytes, or both an error.
func checkSameEncoding(t *testing.T, e Event) {
	t.Helper()
	e.PrevSHA256 = ""
	want, wantErr := reflectEncode(&e)
	got, gotErr := appendEvent(nil, &e)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("appendEvent error %v, encoding/json error %v, for %#v", gotErr, wantErr, e)
	}
	if wantErr == nil && !bytes.Equal(got, want) {
		t.Fatalf("appendEvent differs from encoding/json\n got %s\nwant %s", got, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestAppendEventMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	when := time.Date(2026, 12, 3, 17, 40, 59, 123456789, time.UTC)
	tests := []struct {
		name string
		e    Event
	}{
		{"a bare event keeps time, event, id and prev_sha256", Event{Time: when, Event: KindUpstream}},
		{"a decision with every string field", Event{
			Time: when, Event: KindDecision, ID: "0193a", Replica: "mcpwarden-7d9f-x2", DecisionID: "d", Session: "s", Principal: "token:ab",
			Profile: "p", Server: "fs", Method: "tools/call", Tool: "mcp:fs:read", WireName: "fs__read",
			Decision: DecisionAllow, Rule: "mcp:fs:*", GrantedBy: GrantedByRule, Reason: "r",
			ResultPreview: "x", Error: "e", Detail: "d", Instance: "principal:alice#1 pid 7", Sandbox: "tier landlock", PolicySHA256: "abc",
		}},
		{"a result with pointers and counts", Event{
			Time: when, Event: KindResult, DurationMS: ptr(int64(0)), IsError: ptr(false), ResultBytes: ptr(int64(-7)), Lost: -1,
		}},
		{"a shadowed decision says so", Event{Time: when, Event: KindDecision, Decision: DecisionDeny, Shadow: true, GrantedBy: GrantedByShadow, Outcome: OutcomeAllowed}},
		{"a client with both fields", Event{Time: when, Event: KindDecision, Client: &Client{Name: "claude", Version: "1.0"}}},
		{"a client with only a version", Event{Time: when, Event: KindDecision, Client: &Client{Version: "1.0"}}},
		{"an empty client is an empty object", Event{Time: when, Event: KindDecision, Client: &Client{}}},
		{"an empty arguments map is left out", Event{Time: when, Event: KindDecision, Arguments: map[string]any{}}},
		{"strings with quotes, controls, HTML, invalid UTF-8 and line separators", Event{
			Time: when, Event: KindDecision, Reason: "\"\\\b\f\n\r\t\x00\x1f\x7f<>&\xff\xc3(\u2028\u2029é😀",
			Arguments: map[string]any{"k\"\n\xff<": "v\u2028", "": ""},
		}},
		{"arguments of every JSON shape, keys sorted", Event{Time: when, Event: KindDecision, Arguments: map[string]any{
			"z": nil, "b": true, "f": 1.5, "big": 1e21, "small": 1e-7, "neg": -0.0, "int": 3.0, "f32": float32(0.1),
			"n": json.Number("12.5e-3"), "empty": json.Number(""), "ints": []any{int(1), int8(-2), int16(3), int32(-4), int64(5), uint(6), uint8(7), uint16(8), uint32(9), uint64(math.MaxUint64)},
			"nested": map[string]any{"y": []any{map[string]any{}, []any{}, []any(nil), map[string]any(nil)}},
			"a":      "text",
		}}},
		{"values the encoder does not know go to encoding/json", Event{Time: when, Event: KindDecision, Arguments: map[string]any{
			"raw": json.RawMessage(` {"b": 1, "a" : [ 2 ] } `), "typed": map[string]string{"x": "<y>"}, "struct": Client{Name: "n"},
			"time": when, "bytes": []byte("hi"),
		}}},
		{"a time outside UTC keeps its offset", Event{Time: when.In(time.FixedZone("", -5*3600-30*60)), Event: KindResult}},
		{"a zone offset with seconds is cut to minutes", Event{Time: when.In(time.FixedZone("", 3600+1)), Event: KindResult}},
		{"a time without nanoseconds", Event{Time: when.Truncate(time.Second), Event: KindResult}},
		{"every kind", Event{Time: when, Event: KindLost, Lost: 3}},
		{"tools changed", Event{Time: when, Event: KindToolsChanged, Detail: "+a -b"}},
		{"policy changed", Event{Time: when, Event: KindPolicyChanged, Changed: 3, Widened: 1, PolicySHA256: "ab", PreviousPolicySHA256: "cd", Detail: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkSameEncoding(t, tt.e)
		})
	}
}

func TestAppendEventFailsWhereEncodingJSONFails(t *testing.T) {
	t.Parallel()
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		e    Event
	}{
		{"an invalid kind", Event{Time: when, Event: Kind(99)}},
		{"the zero kind", Event{Time: when}},
		{"an invalid granted_by", Event{Time: when, Event: KindDecision, GrantedBy: GrantedBy(99)}},
		{"an invalid outcome", Event{Time: when, Event: KindDecision, Outcome: Outcome(99)}},
		{"a year past 9999", Event{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Event: KindResult}},
		{"a negative year", Event{Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), Event: KindResult}},
		{"a zone offset of 24 hours", Event{Time: when.In(time.FixedZone("", 24*3600)), Event: KindResult}},
		{"a NaN argument", Event{Time: when, Event: KindDecision, Arguments: map[string]any{"x": math.NaN()}}},
		{"an infinite float32 argument", Event{Time: when, Event: KindDecision, Arguments: map[string]any{"x": []any{float32(math.Inf(-1))}}}},
		{"an invalid json.Number", Event{Time: when, Event: KindDecision, Arguments: map[string]any{"x": json.Number("1e")}}},
		{"an argument encoding/json cannot encode", Event{Time: when, Event: KindDecision, Arguments: map[string]any{"x": make(chan int)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := appendEvent(nil, &tt.e)
			if _, want := reflectEncode(&tt.e); want == nil || err == nil {
				t.Fatalf("appendEvent error %v, encoding/json error %v: want both to fail", err, want)
			}
		})
	}
}

// TestAppendEventKnowsEveryEventField sets each field of Event (and of
// Client) in turn to a non-zero value of its type, found by reflection, so
// that a field added to Event without teaching appendEvent about it fails
// here rather than vanishing from the log.
func TestAppendEventKnowsEveryEventField(t *testing.T) {
	t.Parallel()
	base := Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Event: KindDecision}
	typ := reflect.TypeFor[Event]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		e := base
		v := reflect.ValueOf(&e).Elem().Field(i)
		if !setNonZero(v) {
			t.Fatalf("field %s has type %s, which the test cannot fill: teach appendEvent and this test about it", f.Name, f.Type)
		}
		checkSameEncoding(t, e)
		got, _ := appendEvent(nil, &e)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.Name != "PrevSHA256" && !bytes.Contains(got, []byte(`"`+name+`":`)) {
			t.Errorf("field %s (%q) is not encoded: %s", f.Name, name, got)
		}
	}
}

// setNonZero sets v to a non-zero value of its kind; it reports false for
// a kind it does not know.
func setNonZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x\"<\n")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-42)
	case reflect.Uint8:
		if v.Type() == reflect.TypeFor[Kind]() {
			v.SetUint(uint64(KindResult))
			return true
		}
		if v.Type().Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			v.SetUint(1) // the first name of a typed vocabulary (GrantedBy, Outcome)
			return true
		}
		v.SetUint(42)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if !setNonZero(p.Elem()) {
			return false
		}
		v.Set(p)
	case reflect.Map:
		v.Set(reflect.ValueOf(map[string]any{"k": "v", "n": 1.0}))
	case reflect.Slice:
		if v.Type() != reflect.TypeFor[[]string]() {
			return false
		}
		v.Set(reflect.ValueOf([]string{"a", "x\"<\n"}))
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2025, 5, 6, 7, 8, 9, 10, time.UTC)))
			return true
		}
		for i := range v.NumField() {
			if !setNonZero(v.Field(i)) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

func TestValidNumberAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0", "-0", "1", "-", "01", "1.", "1.5", ".5", "1e", "1e+", "1e5", "1E-5", "-1.5e+10", "0x10", "1_0", " 1", "NaN", "Inf", "1.5.5"} {
		_, err := json.Marshal(json.Number(s))
		if got, want := validNumber(s), err == nil; got != want {
			t.Errorf("validNumber(%q) = %v, encoding/json accepts it: %v", s, got, want)
		}
	}
}

// FuzzAppendEventMatchesEncodingJSON holds appendEvent to encoding/json:
// for any strings in the fields, any JSON as the arguments (decoded into
// float64 and into json.Number) and any numbers and times, the two give
// the same bytes or both fail.
func FuzzAppendEventMatchesEncodingJSON(f *testing.F) {
	f.Add("mcp:fs:read", "reason \"q\" \n <b>", []byte(`{"path":"/srv/x","n":[1,2.5e-7,true,null,{"a":{}}]}`), 1.5, int64(7), int64(1764780000123456789), true)
	f.Add("\xff\u2028", "\x00\x1f\x7f", []byte(`{"":"\u2029","\ud800":1e400}`), math.Inf(1), int64(-1), int64(0), false)
	f.Add("", "", []byte(`[1]`), 0.0, int64(0), int64(-62135596800000000000/1000), false)
	f.Fuzz(func(t *testing.T, s1, s2 string, args []byte, fl float64, n, unixNano int64, numbers bool) {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(args))
		if numbers {
			d.UseNumber()
		}
		_ = d.Decode(&m)
		if m != nil {
			m[s1] = fl
			m[s2] = []any{s1, float32(fl), n, json.Number(s2)}
		}
		e := Event{
			Time: time.Unix(0, unixNano).UTC(), Event: Kind(uint8(n) % uint8(len(kindNames)+1)), ID: s1, Replica: s2, DecisionID: s2,
			Session: s1, Principal: s2, Server: s1, Tool: s2, Rule: s1, Reason: s2, Arguments: m,
			Detail: s1 + s2, Instance: s2, Error: s2 + s1, Lost: n, Shadow: n%2 == 0, Changed: n, Widened: -n,
			PolicySHA256: s1, PreviousPolicySHA256: s2,
			GrantedBy: GrantedBy(uint8(n>>8) % uint8(len(grantedByNames)+1)), Outcome: Outcome(uint8(n>>16) % uint8(len(outcomeNames)+1)),
		}
		if numbers {
			e.Client = &Client{Name: s1, Version: s2}
			e.DurationMS, e.IsError, e.ResultBytes = &n, &numbers, &unixNano
		}
		checkSameEncoding(t, e)
	})
}

// benchEvents are a decision and its result as the proxy writes them for a
// small call.
func benchEvents() []Event {
	when := time.Date(2026, 12, 3, 17, 40, 59, 123456789, time.UTC)
	return []Event{
		{Time: when, Event: KindDecision, ID: NewID(when), Session: "mcp-session-2b7c4f0e-6c1d-4a55-9f1e-0c8d3f6a1b2c",
			Client: &Client{Name: "bench", Version: "1"}, Principal: "local", Server: "bench", Method: "tools/call",
			Tool: "mcp:bench:echo", WireName: "bench__echo", Decision: DecisionAllow, Rule: "mcp:bench:*", GrantedBy: GrantedByRule,
			Arguments: map[string]any{"message": "hello from the benchmark", "n": json.Number("12")}, PolicySHA256: strings.Repeat("ab", 32)},
		{Time: when, Event: KindResult, ID: NewID(when), DecisionID: NewID(when), Session: "mcp-session-2b7c4f0e-6c1d-4a55-9f1e-0c8d3f6a1b2c",
			Server: "bench", Method: "tools/call", Tool: "mcp:bench:echo", WireName: "bench__echo",
			DurationMS: ptr(int64(1)), IsError: ptr(false), ResultBytes: ptr(int64(87)), ResultPreview: "Echo: hello from the benchmark"},
	}
}

// BenchmarkEncodeEvent compares the encoding of a decision and its result
// by encoding/json (the path Log.Write took before appendEvent) with
// appendEvent, both followed by the hash of the line.
func BenchmarkEncodeEvent(b *testing.B) {
	events := benchEvents()
	prev := strings.Repeat("0", 64)
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range events {
				body, err := reflectEncode(&events[i])
				if err != nil {
					b.Fatal(err)
				}
				line := append(append(append(body, '"'), prev...), "\"}\n"...)
				_ = hashLine(line[:len(line)-1])
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		prev := []byte(prev)
		for b.Loop() {
			for i := range events {
				var err error
				if buf, err = appendEvent(buf[:0], &events[i]); err != nil {
					b.Fatal(err)
				}
				buf = append(append(append(buf, '"'), prev...), "\"}\n"...)
				sum := sha256.Sum256(buf[:len(buf)-1])
				prev = hex.AppendEncode(prev[:0], sum[:])
			}
		}
	})
}

// BenchmarkLogWrite is the whole of Log.Write for a decision and its
// result (redaction, encoding, chaining and hashing) into a discarding
// sink and into a file without fsync, as the bench's mcpwarden writes,
// and into a file with the Merkle tree and a checkpoint every 1000 lines
// sent to a witness file (issue 36: what they add to a write).
func BenchmarkLogWrite(b *testing.B) {
	events := benchEvents()
	for _, name := range []string{SinkNone, SinkFile, "file_signed"} {
		b.Run(name, func(b *testing.B) {
			cfg, opts := Config{Sink: name}, &Options{}
			if name != SinkNone {
				cfg.Sink, cfg.Path = SinkFile, b.TempDir()+"/audit.jsonl"
			}
			if name == "file_signed" {
				cfg.Witness, cfg.CheckpointEvery, opts.Signer = b.TempDir()+"/witness.jsonl", 1000, newKey(b).Signer
			}
			l, err := Open(cfg, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range events {
					e.ID = ""
					if err := l.Write(b.Context(), e); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestLogContinuesALogWrittenByEncodingJSON writes lines as Log.Write wrote
// them before appendEvent (encoding/json), chained, then opens the file
// with a Log, writes more, and verifies the whole: logs from before the
// change still verify, and the chain runs on across the change.
func TestLogContinuesALogWrittenByEncodingJSON(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var old []byte
	prev := ""
	for i, e := range benchEvents() {
		e.Reason = fmt.Sprintf("old line %d <&> \u2028 \xff", i)
		e.PrevSHA256 = ""
		body, err := reflectEncode(&e)
		if err != nil {
			t.Fatal(err)
		}
		line := append(append(body, `"`+prev+`"}`...), '\n')
		prev = hashLine(line[:len(line)-1])
		old = append(old, line...)
	}
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range benchEvents() {
		e.ID = ""
		if err := l.Write(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	n, err := Verify(path)
	if err != nil || n != 4 {
		t.Fatalf("Verify = %d lines, %v; want 4 lines, nil", n, err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, old) {
		t.Fatalf("the old lines changed:\n%s", got)
	}
}

// TestInjectedQuotesAndNewlinesDoNotForgeAuditFields writes an event whose
// untrusted strings (argument keys, which the Redactor does not cut, and
// free text) try to close their string and add fields or a whole line; the
// line must stay one line and decode to exactly the event written.
func TestInjectedQuotesAndNewlinesDoNotForgeAuditFields(t *testing.T) {
	t.Parallel()
	forged := "x\",\"decision\":\"allow\",\"granted_by\":\"user_once\"}\n{\"event\":\"decision\",\"prev_sha256\":\"\u2028\\"
	var out bytes.Buffer
	l := New(NewWriterSink(&out), Config{})
	e := Event{Event: KindDecision, Decision: DecisionDeny, GrantedBy: GrantedByRule, Tool: forged,
		Client: &Client{Name: forged}, Arguments: map[string]any{forged: []any{map[string]any{forged: 1.0}}}}
	if err := l.Write(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	line := out.Bytes()
	if bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("one event became several lines: %q", line)
	}
	var got Event
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("the line does not decode: %v: %s", err, line)
	}
	if got.Decision != DecisionDeny || got.GrantedBy != GrantedByRule || got.Tool != forged || got.PrevSHA256 != "" {
		t.Fatalf("decoded %+v: a field was forged", got)
	}
	if _, ok := got.Arguments[forged]; !ok || len(got.Arguments) != 1 {
		t.Fatalf("arguments decoded as %v", got.Arguments)
	}
}

// lineSink hides every method of a Sink but Write and Close: a Log on it
// writes line by line, without group commit, as before it.
type lineSink struct{ s Sink }

func (s lineSink) Write(ctx context.Context, line []byte) error { return s.s.Write(ctx, line) }
func (s lineSink) Close() error                                 { return s.s.Close() }

// BenchmarkLogWriteParallel is Log.Write from many goroutines at once, as
// a proxy with many calls in flight writes: into a discarding sink, into a
// file with group commit, and into the same file line by line (the path
// before group commit), each also with fsync.
func BenchmarkLogWriteParallel(b *testing.B) {
	events := benchEvents()
	for _, sink := range []string{"none", "file", "file_line_by_line", "file_fsync", "file_fsync_line_by_line"} {
		b.Run(sink, func(b *testing.B) {
			var s Sink = DiscardSink{}
			if sink != "none" {
				fs, err := OpenFile(b.TempDir()+"/audit.jsonl", FileOptions{Fsync: strings.Contains(sink, "fsync")})
				if err != nil {
					b.Fatal(err)
				}
				s = fs
				if strings.HasSuffix(sink, "line_by_line") {
					s = lineSink{fs}
				}
			}
			l := New(s, Config{})
			defer l.Close()
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					for _, e := range events {
						e.ID = ""
						if err := l.Write(context.Background(), e); err != nil {
							b.Error(err)
							return
						}
					}
				}
			})
		})
	}
}
