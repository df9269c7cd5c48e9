package proxy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// sameAsUnmarshal fails t unless decodeDirect reads msg as json.Unmarshal
// does: both succeed or both fail, and when they succeed, into the same
// request.
func sameAsUnmarshal(t *testing.T, msg []byte) {
	t.Helper()
	var want, got directRequest
	wantErr := json.Unmarshal(msg, &want)
	if ok := decodeDirect(msg, &got); ok != (wantErr == nil) {
		t.Fatalf("decodeDirect says %v where json.Unmarshal fails with %v: %s", ok, wantErr, msg)
	}
	if wantErr != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeDirect read\n%#v\njson.Unmarshal reads\n%#v\nfrom %s", got, want, msg)
	}
}

func TestDecodeDirectIsJSONUnmarshal(t *testing.T) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":null,"_meta":{"progressToken":7,"x":[1]}}}`,
		// Names as encoding/json matches them: any case, with the long s
		// (U+017F) and the KELVIN SIGN (U+212A) folding to s and k.
		`{"JSONRPC":"2.0","Params":{"NAME":"echo","Arguments":{"a":1}}}`,
		`{"jsonrpc":"2.0","paramſ":{"name":"echo","taſ` + "\u212a" + `":{}}}`,
		`{"jsonrpc":"2.0","params":{"name":"echo","REQUESTSTATE":"s","inputresponses":{}}}`,
		// The last member of a name wins; a second params is read into
		// the first.
		`{"jsonrpc":"2.0","params":{"name":"a"},"params":{"arguments":{"b":2}}}`,
		`{"jsonrpc":"2.0","params":{"name":"a","name":"b","NAME":"c"}}`,
		`{"jsonrpc":"2.0","params":{"_meta":{"progressToken":1},"_meta":null}}`,
		`{"jsonrpc":"2.0","params":{"_meta":{"progressToken":1},"_meta":{"x":2}}}`,
		// null leaves a string and params as they are, and is kept as
		// the raw value of the others.
		`{"jsonrpc":null,"params":null}`,
		`{"jsonrpc":"2.0","params":{"name":null,"task":null,"requestState":null}}`,
		`null`,
		// Values of another type than their field's.
		`{"jsonrpc":2,"params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","params":[]}`,
		`{"jsonrpc":"2.0","params":"x"}`,
		`{"jsonrpc":"2.0","params":{"name":5}}`,
		`{"jsonrpc":"2.0","params":{"name":{}}}`,
		`{"jsonrpc":"2.0","params":{"_meta":"x"}}`,
		`{"jsonrpc":"2.0","params":{"_meta":[1]}}`,
		`[1]`,
		`"s"`,
		// Escapes and text that is not UTF-8.
		`{"jsonrpc":"2.\u0030","params":{"na\u006de":"ec\"ho\ud800","arguments":{ "a" : "\u00e9" }}}`,
		"{\"jsonrpc\":\"2.0\",\"params\":{\"name\":\"e\xffcho\"}}",
		" {\"jsonrpc\" : \"2.0\" ,\n\"params\" : { \"name\" : \"echo\" } } ",
	} {
		t.Run(msg, func(t *testing.T) { sameAsUnmarshal(t, []byte(msg)) })
	}
}

// FuzzDecodeDirectIsJSONUnmarshal holds decodeDirect to json.Unmarshal on
// any valid JSON.
func FuzzDecodeDirectIsJSONUnmarshal(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"progressToken":"t"}}}`))
	f.Add([]byte(`{"JSONRPC":"2.0","paramſ":{"NAME":"a","taſ` + "\u212a" + `":null},"params":{"arguments":[],"requestState":""}}`))
	f.Add([]byte(`{"jsonrpc":null,"params":{"name":1,"inputResponses":{}}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if !json.Valid(msg) {
			return // not what ServeCall is handed
		}
		sameAsUnmarshal(t, bytes.Clone(msg))
	})
}

// BenchmarkDecodeDirect compares decodeDirect with json.Unmarshal on the
// bench's echo call.
func BenchmarkDecodeDirect(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"everything__echo","arguments":{"message":"hello"}}}`)
	b.Run("json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var m directRequest
			if err := json.Unmarshal(msg, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decodeDirect", func(b *testing.B) {
		for b.Loop() {
			var m directRequest
			if !decodeDirect(msg, &m) {
				b.Fatal("not decoded")
			}
		}
	})
}
