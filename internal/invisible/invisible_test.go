package invisible

import "testing"

func TestIsListsEveryCharacterThatShowsNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    rune
		want bool
	}{
		{"a letter shows", 'a', false},
		{"a space shows", ' ', false},
		{"a line break is a control character, not in the list", '\n', false},
		{"a symbol shows", '\u26A0', false},
		{"a zero-width space", '\u200B', true},
		{"a zero-width joiner", '\u200D', true},
		{"a right-to-left mark", '\u200F', true},
		{"a direction override", '\u202E', true},
		{"a directional isolate", '\u2066', true},
		{"the Arabic letter mark", '\u061C', true},
		{"a word joiner", '\u2060', true},
		{"an invisible operator", '\u2064', true},
		{"a byte order mark", '\uFEFF', true},
		{"the soft hyphen", '\u00AD', true},
		{"the Mongolian vowel separator", '\u180E', true},
		{"a Mongolian free variation selector", '\u180B', true},
		{"a tag character", '\U000E0049', true},
		{"an unassigned tag code point", '\U000E0002', true},
		{"a variation selector", '\uFE0F', true},
		{"a supplementary variation selector", '\U000E01EF', true},
		{"the combining grapheme joiner", '\u034F', true},
		{"a Hangul filler", '\u3164', true},
		{"a half-width Hangul filler", '\uFFA0', true},
		{"a Khmer inherent vowel", '\u17B5', true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Is(tt.r); got != tt.want {
				t.Errorf("Is(%U) = %v, want %v", tt.r, got, tt.want)
			}
		})
	}
}
