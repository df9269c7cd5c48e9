package rules

import "strings"

// A Hint is one annotation of a tool's definition as the rules see it:
// absent (the zero value), false or true.
type Hint uint8

const (
	HintAbsent Hint = iota
	HintFalse
	HintTrue
)

// HintOf returns HintFalse or HintTrue for b.
func HintOf(b bool) Hint {
	if b {
		return HintTrue
	}
	return HintFalse
}

// String returns "", "false" or "true".
func (h Hint) String() string {
	switch h {
	case HintFalse:
		return "false"
	case HintTrue:
		return "true"
	}
	return ""
}

// Facts are a tool's annotations (MCP ToolAnnotations), which rules reach
// as `@readOnly`, `@destructive`, `@idempotent` and `@openWorld`. The proxy
// sets them only when the tool's definition is pinned, since an upstream
// can say anything about an unpinned tool; the zero value has every fact
// absent (`@readOnly=true` does not match, `@readOnly!=true` does).
type Facts struct {
	ReadOnly, Destructive, Idempotent, OpenWorld Hint
}

// A fact names what an `@…` condition key reads.
type fact uint8

const (
	factNone fact = iota // an argument key
	factPath
	factReadOnly
	factDestructive
	factIdempotent
	factOpenWorld
	factPrincipal
	factProfile
	factLabel
)

// factNames lists the facts for an error message.
const factNames = "@path, @readOnly, @destructive, @idempotent, @openWorld, @principal, @profile, @label"

// lookupFact returns the fact named by a condition key such as `@path`; ok
// is false for an unknown name or a key with segments (`@path.x`).
func lookupFact(key string) (fact, bool) {
	name, ok := strings.CutPrefix(key, "@")
	if !ok {
		return factNone, false
	}
	switch name {
	case "path":
		return factPath, true
	case "readOnly":
		return factReadOnly, true
	case "destructive":
		return factDestructive, true
	case "idempotent":
		return factIdempotent, true
	case "openWorld":
		return factOpenWorld, true
	case "principal":
		return factPrincipal, true
	case "profile":
		return factProfile, true
	case "label":
		return factLabel, true
	}
	return factNone, false
}

// factText returns the text of a scalar fact of the call, and ok false when
// it is absent.
func (x *evalCtx) factText(f fact) (string, bool) {
	var h Hint
	switch f {
	case factPrincipal:
		return x.principal, x.principal != ""
	case factProfile:
		return x.profile, x.profile != ""
	case factReadOnly:
		h = x.facts.ReadOnly
	case factDestructive:
		h = x.facts.Destructive
	case factIdempotent:
		h = x.facts.Idempotent
	case factOpenWorld:
		h = x.facts.OpenWorld
	}
	return h.String(), h != HintAbsent
}

// annotation reports whether f reads a tool annotation (Call.Facts).
func (f fact) annotation() bool {
	return f >= factReadOnly && f <= factOpenWorld
}

// ReadsAnnotations reports whether some rule reads a tool annotation
// (`@readOnly`, `@destructive`, `@idempotent`, `@openWorld`), so that the
// proxy need only look up Call.Facts then. A nil Policy reads none.
func (p *Policy) ReadsAnnotations() bool {
	return p != nil && p.annotations
}
