package spelling

import "testing"

func TestClosest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, word string
		candidates []string
		want       string
	}{
		{"a letter left out is found", "comand", []string{"command", "cwd", "args"}, "command"},
		{"two letters swapped are found", "wrokspace", []string{"workspace", "servers"}, "workspace"},
		{"a word far from every candidate finds none", "banana", []string{"command", "cwd"}, ""},
		{"a short word allows one edit", "ard", []string{"arg", "args"}, "arg"},
		{"no candidates find none", "x", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Closest(tc.word, tc.candidates); got != tc.want {
				t.Errorf("Closest(%q) = %q, want %q", tc.word, got, tc.want)
			}
		})
	}
}
