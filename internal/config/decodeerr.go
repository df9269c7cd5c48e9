package config

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
)

// durationHint is what every error about a duration says.
const durationHint = "durations look like 30s, 5m, 1h"

// examples are the values shown for keys whose general example would
// mislead, by the key's last level.
var examples = map[string]string{
	"args":      "[-y, pkg]",
	"command":   "npx",
	"url":       "https://example.com/mcp",
	"approvals": "local",
	"transport": "stdio",
	"listen":    "127.0.0.1:8765",
	"servers":   "{fs: {command: npx, args: [-y, pkg]}}",
	"profiles":  "{ci: {servers: [fs]}}",
}

// decodeErrors turns mapstructure's error for the config into one error
// per key, each naming the key as written (servers.fs.args, not
// 'servers[fs].args') and saying what the key wants, with an example.
//
// all is the config's keys, nested, to find the value of a key in.
func decodeErrors(err error, all map[string]any) error {
	parts := flatten(err)
	out := make([]error, 0, len(parts))
	for _, e := range parts {
		var de *mapstructure.DecodeError
		if !errors.As(e, &de) {
			out = append(out, fmt.Errorf("decoding: %w", e))
			continue
		}
		key := keyPath(de.Name(), all)
		out = append(out, &keyError{key: key.text, err: fmt.Errorf("%s: %s", key.text, wantFor(key, de.Unwrap(), valueAt(all, key.segs)))})
	}
	return errors.Join(out...)
}

// wantFor says what key wants, given err, the decoder's complaint about
// its value v.
func wantFor(key keyName, err error, v any) string {
	segs := key.segs
	node := configKeys.at(segs)
	if node == nil || len(segs) == 0 {
		return err.Error()
	}
	// A decode hook's own complaint already says what to write.
	var own mapstructure.Error
	msg := err.Error()
	if node.typ != durationType && !errors.As(err, &own) && !strings.HasPrefix(msg, "source data must be") && !strings.HasPrefix(msg, "expected a map") {
		return msg
	}
	name := segs[len(segs)-1]
	// An item of a list (servers.fs.args[1]) is shown in its list: "1:
	// value" would be no example of what to write.
	item := key.item && len(segs) > 1
	if item {
		name = segs[len(segs)-2]
	}
	got := "; got " + describeValue(v)
	want := func(what, general string) string {
		if item {
			return fmt.Sprintf("want %s for each item, e.g. %s: %s", what, name, example(name, "["+general+"]"))
		}
		return fmt.Sprintf("want %s, e.g. %s: %s", what, name, example(name, general))
	}
	t := node.typ
	switch {
	case t == durationType:
		return want("a duration", "30s") + " (" + durationHint + ")" + got
	case t.Kind() == reflect.Slice:
		return want("a list", "[a, b]") + got
	case t.Kind() == reflect.Map:
		return want("a section of names and values", "{name: value}") + got
	case t.Kind() == reflect.Struct && len(node.children) > 0:
		keys := slices.Sorted(maps.Keys(node.children))
		if item {
			return fmt.Sprintf("want each item of %s to be a section holding keys (%s)%s", name, strings.Join(keys, ", "), got)
		}
		return fmt.Sprintf("want a section holding keys (%s), each on its own line indented under %s:%s", strings.Join(keys, ", "), name, got)
	case reflect.PointerTo(t).Implements(textUnmarshalerType) && isScalar(v):
		// A named value (enforce: true): the type's own words for it.
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText(fmt.Append(nil, v)); err != nil {
			return err.Error()
		}
		return msg
	case t.Kind() == reflect.Bool:
		return want("true or false", "true") + got
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return want("a whole number", "8") + got
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return want("a number", "0.5") + got
	case t.Kind() == reflect.String:
		return want("text", "value") + got
	}
	return msg
}

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// isScalar reports whether v, a decoded config value, is text, a number or
// a boolean.
func isScalar(v any) bool {
	switch v.(type) {
	case []any, map[string]any, nil:
		return false
	}
	return true
}

// example is examples[name], else general.
func example(name, general string) string {
	if e, ok := examples[name]; ok {
		return e
	}
	return general
}

// valueAt is the value at the key of levels segs (limits, 0, window) in
// the config's keys, all; nil if there is none. koanf's Get does not go
// into lists.
func valueAt(all map[string]any, segs []string) any {
	var v any = all
	for _, seg := range segs {
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// describeValue names what the config holds in a value of the wrong type.
func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("text %q", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case []any:
		return "a list"
	case map[string]any:
		return "a section"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("the number %v", v)
}

// durationFromNumber refuses a number other than 0 where a duration is
// wanted: the decoder would take startup_wait: 10 as 10 nanoseconds.
func durationFromNumber(from, to reflect.Type, data any) (any, error) {
	if to != durationType || data == nil || reflect.ValueOf(data).IsZero() {
		return data, nil
	}
	switch from.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil, fmt.Errorf("%v has no unit", data)
	}
	return data, nil
}

// unknownKey is the error for key, which is no config key: it names the
// key meant when one is spelt close to it, else the keys that belong there.
func unknownKey(name keyName) error {
	key, segs := name.text, name.segs
	_, at, suggest := configKeys.lookup(segs)
	msg := key + ": unknown key"
	switch parent := configKeys.at(segs[:at]); {
	case key == "mcpServers" || key == "mcp":
		// A client's config (Claude's, Cursor's, OpenCode's) given as mcpwarden's.
		msg += "; did you mean servers? This is a client's section: mcpwarden import FILE converts a client's config into an mcpwarden config"
	case suggest != "":
		meant := strings.Join(append(slices.Clone(segs[:at]), suggest), ".")
		if at == len(segs)-1 { // as written, with a list's [i]
			meant = key[:len(key)-len(segs[at])] + suggest
		}
		msg += fmt.Sprintf("; did you mean %s?", meant)
	case parent != nil && len(parent.children) > 0:
		where := "at the top level"
		if at > 0 {
			where = "under " + strings.Join(segs[:at], ".")
		}
		msg += fmt.Sprintf("; the keys %s are %s", where, strings.Join(slices.Sorted(maps.Keys(parent.children)), ", "))
	}
	return &keyError{key: key, err: errors.New(msg + " (see docs/config.md)")}
}
