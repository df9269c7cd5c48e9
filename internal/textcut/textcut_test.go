package textcut

import "testing"

func TestHead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		s          string
		n          int
		want       string
		wantHidden int
	}{
		{"a short text is kept whole", "abc", 3, "abc", 0},
		{"a long text keeps its first characters", "abcdef", 2, "ab", 4},
		{"a cut never splits a character", "héllo", 2, "hé", 3},
		{"zero keeps nothing", "abc", 0, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, hidden := Head(tt.s, tt.n)
			if got != tt.want || hidden != tt.wantHidden {
				t.Errorf("Head(%q, %d) = %q, %d; want %q, %d", tt.s, tt.n, got, hidden, tt.want, tt.wantHidden)
			}
		})
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"a short text is kept whole", "run.sh", 6, "run.sh"},
		{"a long path keeps its file name", "/srv/app/notes/run.sh", 8, "…/run.sh"},
		{"a cut never splits a character", "/ééé/é.txt", 6, "…é.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Tail(tt.s, tt.n); got != tt.want {
				t.Errorf("Tail(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
		})
	}
}

func TestHeadBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, s string
		n       int
		want    string
	}{
		{"a short string is whole", "abc", 5, "abc"},
		{"exactly the limit is whole", "abc", 3, "abc"},
		{"a long string is cut", "abcdef", 4, "abcd"},
		{"a cut never splits a character", "aé", 2, "a"},
		{"a four-byte character is kept or dropped whole", "😀x", 3, ""},
		{"zero keeps nothing", "abc", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := HeadBytes(tt.s, tt.n); got != tt.want {
				t.Errorf("HeadBytes(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
		})
	}
}
