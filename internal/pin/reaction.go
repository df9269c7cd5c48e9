package pin

// A Reaction is what the proxy does with a tool whose definition differs
// from the pinned one, until `mcpwarden pin --update` accepts the change:
// the value of pin.on_tool_change and servers.<name>.on_tool_change. The
// zero Reaction means "not set": the server falls back to the global one,
// and that to Ask.
type Reaction string

// The reactions.
const (
	Warn Reaction = "warn" // log and audit the change, expose the new definition, pin it (not a change of annotations: those stay untrusted; not a definition that looks aimed at the model: that one is held as under hide)
	Ask  Reaction = "ask"  // the tool is not listed and calls to it are refused until the change is accepted (as deny: the new text never reaches the model first)
	Deny Reaction = "deny" // the tool is not listed and calls to it are refused until the change is accepted
	Hide Reaction = "hide" // the tool is not listed and calls to it are refused until the change is accepted
)

// DefaultReaction is the reaction when none is configured.
const DefaultReaction = Ask

// Valid reports whether r is one of the reactions or not set.
func (r Reaction) Valid() bool {
	switch r {
	case "", Warn, Ask, Deny, Hide:
		return true
	}
	return false
}

// Or returns r, or fallback if r is not set.
func (r Reaction) Or(fallback Reaction) Reaction {
	if r == "" {
		return fallback
	}
	return r
}
