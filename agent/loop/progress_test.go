package loop

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShortenKeepsWithinBytesAndCharacters(t *testing.T) {
	s := strings.Repeat("é€", 40)
	for n := 3; n < len(s); n++ {
		got := shorten(s, n)
		if len(got) > n || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
			t.Fatalf("shorten(%d) = %q (%d bytes)", n, got, len(got))
		}
	}
	if got := shorten("short", 60); got != "short" {
		t.Errorf("a short text changed: %q", got)
	}
}
