package audit

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
)

// ReplaceAttr redacts a log attribute as the audit log would: the value of an
// attribute whose key, or any enclosing group's name, is a secret key becomes
// Redacted; strings are cut and scrubbed as by String; errors keep being
// errors with a redacted message; maps, slices, structs and json.RawMessage
// are redacted as by Value. It has the signature of slog.HandlerOptions and
// tint.Options ReplaceAttr, so that no secret reaches stderr. The built-in
// message, time, level and source attributes are left alone.
func (r *Redactor) ReplaceAttr(groups []string, a slog.Attr) slog.Attr {
	r = r.orDefault()
	if len(groups) == 0 {
		switch a.Key {
		case slog.MessageKey, slog.TimeKey, slog.LevelKey, slog.SourceKey:
			return a
		}
	}
	for _, g := range groups {
		if r.IsSecretKey(g) {
			return slog.String(a.Key, Redacted)
		}
	}
	return r.attr(a, 0)
}

func (r *Redactor) attr(a slog.Attr, depth int) slog.Attr {
	if r.IsSecretKey(a.Key) {
		return slog.String(a.Key, Redacted)
	}
	a.Value = r.slogValue(a.Value.Resolve(), depth)
	return a
}

func (r *Redactor) slogValue(v slog.Value, depth int) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(r.String(v.String()))
	case slog.KindGroup:
		if depth > maxDepth {
			return slog.StringValue("<redacted: too deep>")
		}
		in := v.Group()
		out := make([]slog.Attr, len(in))
		for i, a := range in {
			out[i] = r.attr(a, depth+1)
		}
		return slog.GroupValue(out...)
	case slog.KindAny:
		return r.anyValue(v.Any())
	}
	return v // numbers, bools, durations, times
}

// A redactedError is an error whose message has been redacted; handlers that
// treat errors specially (tint colours them) still see an error.
type redactedError struct{ msg string }

func (e redactedError) Error() string { return e.msg }

func (r *Redactor) anyValue(x any) slog.Value {
	switch x := x.(type) {
	case nil:
		return slog.AnyValue(nil)
	case error:
		msg := x.Error()
		if red := r.String(msg); red != msg {
			return slog.AnyValue(redactedError{red})
		}
		return slog.AnyValue(x)
	case json.RawMessage, map[string]any, []any:
		return slog.AnyValue(r.Value(x))
	case []byte:
		return slog.StringValue(r.String(string(x)))
	case fmt.Stringer:
		return slog.StringValue(r.String(x.String()))
	}
	switch reflect.ValueOf(x).Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct, reflect.Pointer, reflect.Interface:
		return slog.AnyValue(r.Value(x))
	case reflect.String:
		return slog.StringValue(r.String(reflect.ValueOf(x).String()))
	}
	return slog.AnyValue(x)
}
