package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// compacted is what IDKey is: the id compacted, or as it is when it is
// not JSON.
func compacted(id []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

func TestIDKeyIsTheCompactedID(t *testing.T) {
	for _, id := range []string{
		`1`, `-1.5e3`, `"a b"`, `"\u2028<&>"`, `null`, `true`,
		` 1`, "1\n", `"x" `, `{ "a" : 1 }`, `[1, 2]`, `{}`, `"`, ``, `1 2`,
	} {
		if got, want := IDKey(json.RawMessage(id)), compacted([]byte(id)); got != want {
			t.Errorf("IDKey(%q) = %q, want %q", id, got, want)
		}
	}
}

// FuzzIDKeyIsTheCompactedID holds IDKey's shortcut to json.Compact on any
// bytes.
func FuzzIDKeyIsTheCompactedID(f *testing.F) {
	f.Add([]byte(`"a b"`))
	f.Add([]byte(` {"a": [1, 2]} `))
	f.Fuzz(func(t *testing.T, id []byte) {
		if got, want := IDKey(id), compacted(id); got != want {
			t.Fatalf("IDKey(%q) = %q, want %q", id, got, want)
		}
	})
}

// headSeeds are messages whose heads are read in every way
// json.Unmarshal reads them: names in any case, repeated members, null,
// values of another type than their field's, escapes, text that is not
// UTF-8, and what is not JSON.
var headSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"a","result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	`{"METHOD":"ping","Id":3,"ReSuLt":null,"ERROR":null}`,
	`{"method":"a","method":"b","id":1,"id":"x"}`,
	`{"method":null,"id":null}`,
	`{"method":5}`,
	`{"method":"m","params":{"_meta":{"progressToken":1},"_meta":null}}`,
	`{"method":"m","params":{"_meta":{"protocolVersion":"2025-06-18"}},"params":{"name":"x"}}`,
	`{"method":"m","params":{"_META":{"x":1}}}`,
	`{"method":"m","params":[1]}`,
	`{"method":"m","params":"x"}`,
	`{"method":"m","params":{"_meta":"x"}}`,
	`{"method":"m","params":{"_meta":[]}}`,
	`{"method":"m","params":null}`,
	`{"meth\u006fd":"a\u0000\ud800b","id":1e400}`,
	"{\"method\":\"\xff\"}",
	`null`, `[]`, `5`, `"x"`, `{`, `{"method":"a"} x`, ``, ` {"id" : 1 } `,
}

func TestDecodeHeadIsJSONUnmarshal(t *testing.T) {
	for _, msg := range headSeeds {
		t.Run(msg, func(t *testing.T) { sameHead(t, []byte(msg)) })
	}
}

// FuzzDecodeHeadIsJSONUnmarshal holds DecodeHead to json.Unmarshal on any
// bytes.
func FuzzDecodeHeadIsJSONUnmarshal(f *testing.F) {
	for _, msg := range headSeeds {
		f.Add([]byte(msg))
	}
	f.Fuzz(func(t *testing.T, msg []byte) { sameHead(t, msg) })
}

// sameHead fails t unless DecodeHead reads msg as json.Unmarshal does.
func sameHead(t *testing.T, msg []byte) {
	t.Helper()
	var want, got Head
	wantErr := json.Unmarshal(msg, &want)
	if ok := DecodeHead(msg, &got, nil); ok != (wantErr == nil) {
		t.Fatalf("DecodeHead says %v where json.Unmarshal fails with %v: %q", ok, wantErr, msg)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeHead read\n%#v\njson.Unmarshal reads\n%#v\nfrom %q", got, want, msg)
	}
}

// BenchmarkDecodeHead compares DecodeHead with json.Unmarshal on the
// bench's echo call.
func BenchmarkDecodeHead(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"everything__echo","arguments":{"message":"hello"}}}`)
	b.Run("json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var h Head
			if err := json.Unmarshal(msg, &h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeHead", func(b *testing.B) {
		for b.Loop() {
			var h Head
			if !DecodeHead(msg, &h, nil) {
				b.Fatal("not decoded")
			}
		}
	})
}
