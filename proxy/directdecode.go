package proxy

import (
	"bytes"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/rawjson"
)

// errNotAsDecoded stands for what makes json.Unmarshal fail on a member:
// a value of another type than its field's.
var errNotAsDecoded = errors.New("a member's value is not of its field's type")

// decodeDirect reads msg into m as json.Unmarshal(msg, m) reads it, and
// reports whether json.Unmarshal would have succeeded. msg is valid JSON:
// both fronts decode a message's head before they hand it to ServeCall.
// json.Unmarshal reaches these few fields by reflection over the whole
// message, about 4 µs of a call's CPU in the c16 echo profile; here the
// members are walked (rawjson) and only the values read are decoded.
// Names match fields as encoding/json matches them, exactly or under
// Unicode case folding (strings.EqualFold); the last member of a name
// wins, and a second params object is read into the first
// (FuzzDecodeDirectIsJSONUnmarshal).
func decodeDirect(msg []byte, m *directRequest) bool {
	if rawjson.IsNull(msg) {
		return true
	}
	return rawjson.Object(msg, func(key string, v []byte) error {
		switch {
		case named(key, "jsonrpc"):
			return decodeText(v, &m.JSONRPC)
		case named(key, "params"):
			if rawjson.IsNull(v) {
				return nil
			}
			return rawjson.Object(v, m.decodeParam)
		}
		return nil
	}) == nil
}

// decodeParam reads the member key: v of params into m.
func (m *directRequest) decodeParam(key string, v []byte) error {
	p := &m.Params
	switch {
	case named(key, "name"):
		return decodeText(v, &p.Name)
	case named(key, "arguments"):
		p.Arguments = bytes.Clone(v)
	case named(key, "_meta"):
		if rawjson.IsNull(v) {
			p.Meta = nil
			return nil
		}
		if p.Meta == nil {
			p.Meta = &mcp.Meta{}
		}
		return p.Meta.UnmarshalJSON(v)
	case named(key, "task"):
		p.Task = bytes.Clone(v)
	case named(key, "requestState"):
		p.RequestState = bytes.Clone(v)
	case named(key, "inputResponses"):
		p.InputResponses = bytes.Clone(v)
	}
	return nil
}

// named reports whether encoding/json reads a member named key into the
// field named field.
func named(key, field string) bool {
	return key == field || strings.EqualFold(key, field)
}

// decodeText reads the raw value v into the string *dst as json.Unmarshal
// does: null leaves it as it is.
func decodeText(v []byte, dst *string) error {
	if rawjson.IsNull(v) {
		return nil
	}
	if v[0] != '"' {
		return errNotAsDecoded
	}
	s, err := rawjson.String(v)
	if err != nil {
		return err
	}
	*dst = s
	return nil
}
