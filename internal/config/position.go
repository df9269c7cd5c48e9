package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	yamlv3 "go.yaml.in/yaml/v3"
)

// A textPos is a place in the config text: a line and a column, from 1.
// The zero textPos is no place.
type textPos struct{ line, col int }

// String is "line:col", "line" if the column is not known, or "" for no
// place.
func (p textPos) String() string {
	switch {
	case p.line == 0:
		return ""
	case p.col == 0:
		return strconv.Itoa(p.line)
	}
	return fmt.Sprintf("%d:%d", p.line, p.col)
}

// offsetPos is the place of byte offset off in data.
func offsetPos(data []byte, off int) textPos {
	off = min(max(off, 0), len(data))
	lead := data[:off]
	return textPos{line: bytes.Count(lead, []byte{'\n'}) + 1, col: off - bytes.LastIndexByte(lead, '\n')}
}

// keySegments splits a key as errors name it ("policy.deny[0]",
// "servers.fs.args") into its levels: policy, deny, 0.
func keySegments(key string) []string {
	return strings.Split(strings.NewReplacer("[", ".", "]", "").Replace(key), ".")
}

// keyPos is where key is written in data, a config in format ext: the
// place of its name, or of the name of the longest leading part of it
// that is written (a missing key is placed at the section that lacks it).
// It is the zero textPos if not even the first level is written.
func keyPos(data []byte, ext, key string) textPos {
	segs := keySegments(key)
	switch strings.ToLower(ext) {
	case ".json":
		return jsonKeyPos(data, segs)
	case ".toml":
		return tomlKeyPos(data, segs)
	}
	return yamlKeyPos(data, segs)
}

func yamlKeyPos(data []byte, segs []string) textPos {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return textPos{}
	}
	var at textPos
	n := doc.Content[0]
	for _, seg := range segs {
		var next *yamlv3.Node
		switch n.Kind {
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Value == seg {
					at, next = textPos{k.Line, k.Column}, n.Content[i+1]
				}
			}
		case yamlv3.SequenceNode:
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
				at = textPos{next.Line, next.Column}
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return at
}

func jsonKeyPos(data []byte, segs []string) textPos {
	off := -1
	dec := json.NewDecoder(bytes.NewReader(data))
	for _, seg := range segs {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		found := false
		switch tok {
		case json.Delim('{'):
			for !found && dec.More() {
				k, err := dec.Token()
				if err != nil {
					break
				}
				if k == seg {
					end := int(dec.InputOffset())
					off, found = bytes.LastIndexByte(data[:end-1], '"'), true
				} else if skipJSONValue(dec) != nil {
					break
				}
			}
		case json.Delim('['):
			want, err := strconv.Atoi(seg)
			for i := 0; err == nil && !found && dec.More(); i++ {
				if i == want {
					start := int(dec.InputOffset())
					for start < len(data) && strings.IndexByte(" \t\r\n,", data[start]) >= 0 {
						start++
					}
					off, found = start, true
				} else if skipJSONValue(dec) != nil {
					break
				}
			}
		}
		if !found {
			break
		}
	}
	if off < 0 {
		return textPos{}
	}
	return offsetPos(data, off)
}

// jsonTwice finds the first key that an object of data, a JSON text,
// holds twice, which a JSON parser takes the last of, silently: a second
// "policy" would drop the first one's deny rules unseen. key is its path
// as errors name it (policy.deny, servers.fs); "" if no key is twice.
func jsonTwice(data []byte) (key string, pos textPos) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(path string) (string, textPos, error)
	walk = func(path string) (string, textPos, error) {
		tok, err := dec.Token()
		if err != nil {
			return "", textPos{}, err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", textPos{}, err
				}
				k, _ := kt.(string)
				child := k
				if path != "" {
					child = path + "." + k
				}
				if seen[k] {
					end := int(dec.InputOffset())
					return child, offsetPos(data, bytes.LastIndexByte(data[:end-1], '"')), nil
				}
				seen[k] = true
				if key, pos, err := walk(child); key != "" || err != nil {
					return key, pos, err
				}
			}
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if key, pos, err := walk(fmt.Sprintf("%s[%d]", path, i)); key != "" || err != nil {
					return key, pos, err
				}
			}
		default:
			return "", textPos{}, nil
		}
		_, err = dec.Token() // the closing } or ]
		return "", textPos{}, err
	}
	key, pos, _ = walk("")
	return key, pos
}

// skipJSONValue reads the next value of dec whole.
func skipJSONValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

func tomlKeyPos(data []byte, segs []string) textPos {
	var p unstable.Parser
	p.Reset(data)
	var table []string
	var at textPos
	best := 0
	for p.NextExpression() {
		e := p.Expression()
		var key []string
		var first *unstable.Node
		for it := e.Key(); it.Next(); {
			if first == nil {
				first = it.Node()
			}
			key = append(key, string(it.Node().Data))
		}
		if first == nil {
			continue
		}
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = key
		case unstable.KeyValue:
			key = append(append([]string(nil), table...), key...)
		default:
			continue
		}
		// The written key counts if it leads the one sought and is longer
		// than any found so far.
		if len(key) > best && len(key) <= len(segs) && slices.Equal(key, segs[:len(key)]) {
			s := p.Shape(first.Raw).Start
			at, best = textPos{s.Line, s.Column}, len(key)
		}
	}
	return at
}

// yamlLine matches the line number in a YAML parser's message.
var yamlLine = regexp.MustCompile(`^yaml: (?:unmarshal errors:\s*)?(?:line (\d+): )?`)

// parseError returns err, the parser's error for data in format ext, as
// the place in the text it is at and what it says.
func parseError(data []byte, err error) (textPos, string) {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tdec *toml.DecodeError
	switch {
	case errors.As(err, &syn):
		return offsetPos(data, int(syn.Offset)-1), syn.Error()
	case errors.As(err, &typ):
		return offsetPos(data, int(typ.Offset)-1), "the file must hold an object ({...}) of config keys"
	case errors.As(err, &tdec):
		line, col := tdec.Position()
		return textPos{line, col}, strings.TrimPrefix(tdec.Error(), "toml: ")
	}
	msg := err.Error()
	if m := tomlTwice.FindStringSubmatch(msg); m != nil {
		return tomlRedefinition(data, m[1]), strings.TrimPrefix(msg, "toml: ") + "; write each key and table once"
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
		if lines := bytes.Split(data, []byte("\n")); strings.Contains(msg, "tab character") ||
			line > 0 && line <= len(lines) && bytes.ContainsRune(lines[line-1][:len(lines[line-1])-len(bytes.TrimLeft(lines[line-1], " \t"))], '\t') {
			msg += "; indent with spaces, not tabs"
		}
		return textPos{line: line}, msg
	}
	return textPos{}, msg
}

// tomlTwice matches go-toml's message for a key or table defined twice,
// which carries no position.
var tomlTwice = regexp.MustCompile(`^toml: (?:key|table) (\S+) (?:is already defined|already exists)`)

// tomlRedefinition is where key name is defined the last time in data, a
// TOML text (as a key = value, or as the last part of a table header):
// the second definition, which the parser refuses. It is the zero textPos
// if name is defined fewer than twice.
func tomlRedefinition(data []byte, name string) textPos {
	name = name[strings.LastIndex(name, ".")+1:]
	var found []textPos
	for i, line := range strings.Split(string(data), "\n") {
		text := strings.TrimLeft(line, " \t")
		var defined string
		if header, ok := strings.CutPrefix(text, "["); ok {
			header, _, _ = strings.Cut(strings.TrimPrefix(header, "["), "]")
			defined = header[strings.LastIndex(header, ".")+1:]
		} else if key, _, ok := strings.Cut(text, "="); ok {
			defined = key
		}
		if name != "" && strings.Trim(defined, " \t\"'") == name {
			found = append(found, textPos{line: i + 1, col: len(line) - len(text) + 1})
		}
	}
	if len(found) < 2 {
		return textPos{}
	}
	return found[len(found)-1]
}
