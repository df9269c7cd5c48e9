package keyfold

import (
	"strings"
	"testing"
)

func TestEqual(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"equal keys are equal", "path", "path", true},
		{"upper case folds to lower case", "PATH", "path", true},
		{"a long s U+017F folds to s", "\u017fource", "source", true},
		{"the KELVIN SIGN U+212A folds to k", "\u212aeys", "Keys", true},
		{"an underscore is ignored as encoding/json/v2 does", "filePath", "file_path", true},
		{"a dash is ignored", "file-path", "filepath", true},
		{"different names differ", "path", "paths", false},
		{"a prefix is not equal", "pat", "path", false},
		{"a dotless i is not i", "\u0131d", "id", false},
		{"empty keys are equal", "", "", true},
		{"an underscore alone equals the empty key", "_", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Equal(tt.a, tt.b); got != tt.want {
				t.Errorf("Equal(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := Key(tt.a) == Key(tt.b); got != tt.want {
				t.Errorf("Key(%q) == Key(%q) is %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestEqualDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Equal("\u017fOURCE_path", "source_PATH") }); n != 0 {
		t.Errorf("Equal allocates %v times", n)
	}
}

// FuzzEqual checks that Equal agrees with Key, is symmetric, and agrees
// with strings.EqualFold on keys without `_` and `-`.
func FuzzEqual(f *testing.F) {
	f.Add("path", "PATH")
	f.Add("\u017fource", "source")
	f.Add("file_path", "filePath")
	f.Fuzz(func(t *testing.T, a, b string) {
		eq := Equal(a, b)
		if eq != Equal(b, a) {
			t.Fatalf("Equal(%q, %q) is not symmetric", a, b)
		}
		if eq != (Key(a) == Key(b)) {
			t.Fatalf("Equal(%q, %q) = %v, but Key gives %q and %q", a, b, eq, Key(a), Key(b))
		}
		if !strings.ContainsAny(a+b, "_-\ufffd") && eq != strings.EqualFold(a, b) {
			t.Fatalf("Equal(%q, %q) = %v, strings.EqualFold disagrees", a, b, eq)
		}
	})
}
