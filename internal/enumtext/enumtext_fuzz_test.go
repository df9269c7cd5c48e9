package enumtext

import "testing"

// FuzzNames checks that a name is read back as the value it was written
// from, and that anything read is a value that can be written.
func FuzzNames(f *testing.F) {
	f.Add("red", uint8(0))
	f.Add("Green", uint8(1))
	f.Add("", uint8(200))
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		if v, ok := colorNames.Lookup(s); ok {
			b, err := colorNames.Marshal(v, "color")
			if err != nil || string(b) != s {
				t.Fatalf("Lookup(%q) = %d, which marshals to %q, %v", s, v, b, err)
			}
		}
		b, err := colorNames.Marshal(color(n), "color")
		if (err == nil) != (int(n) < len(colorNames)) {
			t.Fatalf("Marshal(%d) = %q, %v with %d names", n, b, err, len(colorNames))
		}
		if err == nil {
			if v, ok := colorNames.Lookup(string(b)); !ok || v != color(n) {
				t.Fatalf("Lookup(Marshal(%d)) = %d, %t", n, v, ok)
			}
		}
	})
}
