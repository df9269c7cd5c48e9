package rules

// IsPathKey reports whether values under the argument key are path-like
// (Spec.PathKeys). A nil Policy has none.
func (p *Policy) IsPathKey(key string) bool {
	return p != nil && p.pathKeys[key]
}
