package config

// ErrorPlace returns where in data, a YAML, JSON or TOML text, the
// parser's error err is ("line:col", "line", or "" if it does not say) and
// what it says without the parser's prefix: the config's own reading of
// its parsers' errors, for other files mcpwarden reads (test's case files).
func ErrorPlace(data []byte, err error) (place, msg string) {
	pos, msg := parseError(data, err)
	return pos.String(), msg
}
