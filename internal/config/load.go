package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/json"
	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
)

// EnvPrefix starts every environment variable that overrides a config key.
// Levels are separated by a double underscore: MCPWARDEN_AUDIT__PATH sets
// audit.path, MCPWARDEN_LISTEN sets listen.
const EnvPrefix = "MCPWARDEN_"

// DefaultBearerTokenEnv is the variable the HTTP listener's token is read
// from when auth.bearer_token_env is not set.
const DefaultBearerTokenEnv = "MCPWARDEN_TOKEN"

// DefaultStartupWait is startup_wait when the config does not set it.
const DefaultStartupWait = 10 * time.Second

// Load reads the config file at path, applies the MCPWARDEN_* overrides found
// in environ (as from os.Environ), expands ${VAR} in server env and headers
// from environ, and validates the result. Every problem found is reported,
// each naming its source: the file and the key, or the environment
// variable and the key it sets.
func Load(path string, environ []string) (*Config, error) {
	return load(path, environ, false)
}

// LoadOffline is Load for the commands that start no server (check,
// validate --offline, tools --offline): a ${VAR} in server env or headers
// whose variable is not set is kept as written, with a warning, instead of
// failing the load, so that a policy can be checked on a machine, or in a
// shell, without the servers' secrets (import --write moves them into the
// client's file, which passes them to serve alone).
func LoadOffline(path string, environ []string) (*Config, error) {
	return load(path, environ, true)
}

func load(path string, environ []string, offline bool) (*Config, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("config %s does not exist; correct --config, or write one: mcpwarden import writes one from a client's config, and examples/quickstart.yaml is one to start from (%w)", path, err)
	case err != nil:
		return nil, fmt.Errorf("reading config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	cfg, err := parse(data, filepath.Ext(path), filepath.Dir(abs), environ, "config "+path, offline)
	if err != nil {
		return nil, err
	}
	cfg.File = abs
	return cfg, nil
}

// Parse is Load for config text already in memory; ext (".yaml", ".yml",
// ".json", ".toml") picks the format, and dir, an absolute directory, is
// what relative paths in the config are relative to. Errors about the
// text name it "config".
func Parse(data []byte, ext, dir string, environ []string) (*Config, error) {
	return parse(data, ext, dir, environ, "config", false)
}

// parse is Parse with the name errors give the text (source); offline is
// LoadOffline's leniency about unset variables.
func parse(data []byte, ext, dir string, environ []string, source string, offline bool) (*Config, error) {
	var parser koanf.Parser
	var format string
	switch strings.ToLower(ext) {
	case ".yaml", ".yml", "":
		parser, format = yaml.Parser(), "YAML"
	case ".json":
		parser, format = json.Parser(), "JSON"
	case ".toml":
		parser, format = toml.Parser(), "TOML"
	default:
		return nil, fmt.Errorf("%s: unknown config format %q: use .yaml, .json or .toml", source, ext)
	}
	k := koanf.New(".")
	src := textSource{name: source, text: data, ext: ext}
	if err := k.Load(rawbytes.Provider(data), parser); err != nil {
		pos, msg := parseError(data, err)
		return nil, fmt.Errorf("%s: invalid %s: %s", src.place(pos), format, msg)
	}
	if format == "JSON" {
		// YAML and TOML refuse a key written twice; JSON keeps the last.
		if key, pos := jsonTwice(data); key != "" {
			return nil, fmt.Errorf("%s: invalid JSON: %s is written twice, and the second would replace the first whole, rules and all; write it once", src.place(pos), key)
		}
	}
	env := envMap(environ)
	sources, warnings, err := applyEnv(k, env, data)
	if err != nil {
		return nil, err
	}
	cfg, err := decode(k)
	if err != nil {
		return nil, attribute(err, src, sources)
	}
	cfg.Dir = dir
	cfg.Warnings = warnings
	cfg.envSources = sources
	cfg.source = src
	unset, err := cfg.expand(env, offline)
	if err != nil {
		return nil, attribute(err, src, sources)
	}
	cfg.Warnings = append(cfg.Warnings, unset...)
	if err := cfg.Validate(); err != nil {
		return nil, attribute(err, src, sources)
	}
	return cfg, nil
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// ownVariable reports whether name is one of mcpwarden's variables that
// are no config keys: the audit signing key, and the upstream token
// store's key and keyring switch.
func ownVariable(name string) bool {
	switch name {
	case AuditKeyEnv, tokenstore.KeyEnv, tokenstore.KeyringEnv:
		return true
	}
	return false
}

// applyEnv sets the keys named by MCPWARDEN_* variables and returns which
// variable set which key. A value is read as a YAML scalar or flow
// sequence, so "true", "8765" and "[a, b]" get their types. The variable
// holding the bearer token, MCPWARDEN_AUDIT_SIGNING_KEY (the audit
// signing key itself) and the upstream token store's variables
// (tokenstore.KeyEnv, tokenstore.KeyringEnv) are not keys and are skipped.
//
// A variable whose name is no config key is ignored if the config text
// names it (a token or a ${VAR}). Otherwise it is an error naming it, with
// the spelling meant, when it looks meant as a key: its first level is a
// top-level key or spelt like one, or it is a key with single underscores
// between levels (MCPWARDEN_AUDIT__REQUIRD, MCPWARDEN_LISTN,
// MCPWARDEN_AUDIT_REQUIRED). Any other (MCPWARDEN_CONFIG, MCPWARDEN_HOME)
// is no concern of the config and is ignored with a warning: mcpwarden
// does not stop for an unrelated variable, and does not silently drop a
// misspelt setting.
func applyEnv(k *koanf.Koanf, env map[string]string, text []byte) (envSources, []string, error) {
	tokenEnv := k.String("auth.bearer_token_env")
	if tokenEnv == "" {
		tokenEnv = DefaultBearerTokenEnv
	}
	names := make([]string, 0, len(env))
	for name := range env {
		if strings.HasPrefix(name, EnvPrefix) && name != tokenEnv && !ownVariable(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	sources := envSources{}
	var warnings []string
	var errs []error
	for _, name := range names {
		key := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "__", "."))
		path := strings.Split(key, ".")
		if ok, at, suggest := configKeys.lookup(path); !ok {
			var meant []string
			switch {
			case suggest != "":
				meant = append(slices.Clone(path[:at]), suggest)
			case len(path) == 1:
				meant = configKeys.split(key) // a single underscore between levels
			}
			switch {
			case bytes.Contains(text, []byte(name)):
				// The config names it: a token or a ${VAR}, not a key.
			case at > 0 || meant != nil:
				msg := fmt.Sprintf("environment variable %s: %q is not a config key", name, key)
				if meant != nil {
					msg += fmt.Sprintf("; did you mean %s (%s)?", envVarFor(meant), strings.Join(meant, "."))
				}
				errs = append(errs, errors.New(msg+" (see docs/config.md)"))
			default:
				warnings = append(warnings, fmt.Sprintf("environment variable %s is ignored: %q is not a config key (MCPWARDEN_<KEY>, with __ between levels, sets one: see docs/configuration.md)", name, key))
			}
			continue
		}
		var v any
		if err := yamlv3.Unmarshal([]byte(env[name]), &v); err != nil {
			errs = append(errs, fmt.Errorf("environment variable %s: %w", name, err))
			continue
		}
		if v == nil {
			v = env[name]
		}
		if err := k.Set(key, v); err != nil {
			errs = append(errs, fmt.Errorf("environment variable %s: %w", name, err))
			continue
		}
		sources[key] = name
	}
	return sources, warnings, errors.Join(errs...)
}

// decode turns the merged keys into a Config, strictly: an unknown key or a
// value of the wrong type is an error naming the key.
func decode(k *koanf.Koanf) (*Config, error) {
	var cfg Config
	var md mapstructure.Metadata
	err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{
		DecoderConfig: &mapstructure.DecoderConfig{
			DecodeHook: mapstructure.ComposeDecodeHookFunc(
				durationFromNumber,
				mapstructure.StringToTimeDurationHookFunc(),
				mapstructure.TextUnmarshallerHookFunc(),
				decodeCaseRule,
				decodeSandbox,
			),
			Metadata:   &md,
			TagName:    "koanf",
			ErrorUnset: false,
		},
	})
	if err != nil {
		return nil, decodeErrors(err, k.Raw())
	}
	if len(md.Unused) > 0 {
		slices.Sort(md.Unused)
		errs := make([]error, 0, len(md.Unused))
		all := k.Raw()
		for _, key := range md.Unused {
			errs = append(errs, unknownKey(keyPath(key, all)))
		}
		return nil, errors.Join(errs...)
	}
	return &cfg, nil
}

// A keyName is a key as errors show it, "servers.fs.args[1]", with its
// levels (servers, fs, args, 1) kept as found: a map's member may hold
// "." or "]" (MCPWARDEN_SERVERS__0]), so the text cannot be split again.
type keyName struct {
	text string
	segs []string
	item bool // the last level is a list's index
}

// keyPath turns mapstructure's "servers[fs].comand" into the key as
// written, "servers.fs.comand"; a list's index stays: "limits[0].window".
// mapstructure brackets a map's keys and a list's indexes alike, so all,
// the config's values, tells them apart: "servers[0]" is the server named
// 0 (MCPWARDEN_SERVERS__0), not an index. Where all holds no value, a
// bracketed number is taken for an index.
func keyPath(key string, all map[string]any) keyName {
	var name keyName
	var b strings.Builder
	var v any = all
	for key != "" {
		var seg string
		bracketed := key[0] == '['
		switch {
		case key[0] == '.':
			key = key[1:]
			continue
		case bracketed:
			end := closingBracket(key, v)
			if end < 0 {
				seg, key = key[1:], ""
			} else {
				seg, key = key[1:end], key[end+1:]
			}
		default:
			end := strings.IndexAny(key, ".[")
			if end < 0 {
				end = len(key)
			}
			seg, key = key[:end], key[end:]
		}
		name.segs = append(name.segs, seg)
		list, isList := v.([]any)
		m, isMap := v.(map[string]any)
		name.item = bracketed && (isList || !isMap && isIndex(seg))
		if name.item {
			b.WriteString("[" + seg + "]")
			v = nil
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(list) {
				v = list[i]
			}
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
		v = m[seg] // nil when v is not a map
	}
	name.text = b.String()
	return name
}

// closingBracket is the index of the "]" that closes the bracket key
// starts with; -1 if none does. A map's member may hold "]" itself
// (MCPWARDEN_SERVERS__0]: the server "0]", named "servers[0]]"), so the
// bracket closes after a member of v, when v is a map, that the rest of
// key can follow; else at the first "]" the rest can follow; else at
// the first "]".
func closingBracket(key string, v any) int {
	m, _ := v.(map[string]any)
	first, followed := strings.IndexByte(key, ']'), -1
	for end := first; end >= 0; {
		rest := key[end+1:]
		if rest == "" || rest[0] == '.' || rest[0] == '[' {
			if _, member := m[key[1:end]]; member {
				return end
			}
			if followed < 0 {
				followed = end
			}
		}
		next := strings.IndexByte(rest, ']')
		if next < 0 {
			break
		}
		end += 1 + next
	}
	if followed >= 0 {
		return followed
	}
	return first
}

func isIndex(seg string) bool {
	return seg != "" && strings.Trim(seg, "0123456789") == ""
}

// expand replaces ${VAR} and ${VAR:-default} in server env values and
// headers. A variable that is not set, and has no default, is an error: a
// missing credential should stop the start, not send an empty header. With
// keepUnset, such a value is kept as written instead, and returned as a
// warning.
func (c *Config) expand(env map[string]string, keepUnset bool) ([]string, error) {
	var errs []error
	var warnings []string
	for _, name := range sortedNames(c.Servers) {
		s := c.Servers[name]
		for _, field := range []struct {
			key string
			m   map[string]string
		}{{"env", s.Env}, {"headers", s.Headers}} {
			for _, k := range sortedNames(field.m) {
				expanded, missing := expandVars(field.m[k], env)
				switch {
				case len(missing) == 0:
					field.m[k] = expanded
				case keepUnset:
					warnings = append(warnings, fmt.Sprintf("%s: servers.%s.%s.%s: environment variable %s is not set: kept as written here; serve needs it (or a default: ${%s:-value})", c.placeOf("servers."+name+"."+field.key+"."+k), name, field.key, k, strings.Join(missing, ", "), missing[0]))
				default:
					errs = append(errs, fmt.Errorf("servers.%s.%s.%s: environment variable %s is not set: set it in the environment mcpwarden runs in, or give a default: ${%s:-value}", name, field.key, k, strings.Join(missing, ", "), missing[0]))
				}
			}
		}
	}
	return warnings, errors.Join(errs...)
}

// varRef matches a ${VAR} or ${VAR:-default} reference. Only the braced
// form is expanded, so a literal "$" in a value (a password, say) is left
// alone.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// expandVars expands the references in s from env. A ${VAR:-default} takes
// the default when VAR is unset or empty, as in the shell (and in Claude
// Code's and VS Code's configs); the names of unset variables without a
// default are returned.
func expandVars(s string, env map[string]string) (string, []string) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name, hasDefault := m[1], strings.Contains(ref, ":-")
		v, ok := env[name]
		switch {
		case hasDefault && v == "":
			return m[2]
		case !ok:
			missing = append(missing, name)
		}
		return v
	})
	return out, missing
}

// sortedNames are m's keys in order, so that messages come in a fixed order.
func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
