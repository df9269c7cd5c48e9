package enumtext

import (
	"testing"
)

type color uint8

const (
	red color = iota
	green
)

var colorNames = Names[color]{red: "red", green: "green"}

func TestNamesReadAndWriteTheSameTable(t *testing.T) {
	t.Parallel()
	for _, c := range []color{red, green} {
		b, err := colorNames.Marshal(c, "color")
		if err != nil {
			t.Fatalf("Marshal(%d): %v", c, err)
		}
		got, ok := colorNames.Lookup(string(b))
		if !ok || got != c {
			t.Errorf("Lookup(%q) = %d, %t; want %d, true", b, got, ok, c)
		}
		if s := colorNames.String(c, "color"); s != string(b) {
			t.Errorf("String(%d) = %q; want %q", c, s, b)
		}
	}
}

func TestUnknownValuesAndNamesAreRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"an unknown value is not marshalled", func(t *testing.T) {
			if b, err := colorNames.Marshal(7, "color"); err == nil || err.Error() != "invalid color 7" {
				t.Errorf("Marshal(7) = %q, %v; want the error invalid color 7", b, err)
			}
		}},
		{"an unknown value prints its type and number", func(t *testing.T) {
			if s := colorNames.String(7, "color"); s != "color(7)" {
				t.Errorf("String(7) = %q; want color(7)", s)
			}
		}},
		{"a name in another case is unknown", func(t *testing.T) {
			if got, ok := colorNames.Lookup("Red"); ok || got != 0 {
				t.Errorf("Lookup(Red) = %d, %t; want 0, false", got, ok)
			}
		}},
		{"setting an unknown name leaves the zero value", func(t *testing.T) {
			c := green
			if colorNames.Set(&c, "blue") || c != red {
				t.Errorf("Set(blue) left %d; want %d (the zero value) and false", c, red)
			}
		}},
		{"the empty name is unknown", func(t *testing.T) {
			if _, ok := colorNames.Lookup(""); ok {
				t.Error("Lookup(\"\") found a value")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t)
		})
	}
}
