package headtail

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every cut of texts made of one-, two-, three- and four-byte characters, at every head and tail size: the result is
// valid UTF-8, keeps a prefix and a suffix of the text, and its marker counts exactly the bytes that are missing.
func TestKeepNeverSplitsACharacter(t *testing.T) {
	for _, text := range []string{
		strings.Repeat("aé€😀", 8),
		strings.Repeat("😀", 9),
		"x" + strings.Repeat("é", 20) + "y",
	} {
		for head := 0; head <= len(text); head++ {
			for tail := 0; head+tail < len(text); tail++ {
				got := Keep(text, head, tail)
				if !utf8.ValidString(got) {
					t.Fatalf("Keep(%q, %d, %d) split a character: %q", text, head, tail, got)
				}
				h, rest, ok := strings.Cut(got, "\n[... ")
				if !ok {
					t.Fatalf("Keep(%q, %d, %d) = %q: no marker", text, head, tail, got)
				}
				num, tl, _ := strings.Cut(rest, " bytes left out ...]\n")
				n, err := strconv.Atoi(num)
				if err != nil {
					t.Fatalf("Keep(%q, %d, %d) = %q: marker unreadable: %v", text, head, tail, got, err)
				}
				if !strings.HasPrefix(text, h) || !strings.HasSuffix(text, tl) || len(h) > head || len(tl) > tail {
					t.Fatalf("Keep(%q, %d, %d) = %q: head %q or tail %q is not the text's", text, head, tail, got, h, tl)
				}
				if len(h)+n+len(tl) != len(text) {
					t.Fatalf("Keep(%q, %d, %d) = %q: %d + %d left out + %d != %d", text, head, tail, got, len(h), n, len(tl), len(text))
				}
				if got != h+Marker(int64(n))+tl {
					t.Fatalf("Keep(%q, %d, %d) = %q: not head, Marker, tail", text, head, tail, got)
				}
			}
		}
	}
}

func TestKeepShortTextIsUnchanged(t *testing.T) {
	for _, s := range []string{"", "abc", "é€😀"} {
		if got := Keep(s, len(s)/2, len(s)-len(s)/2); got != s {
			t.Errorf("Keep(%q) = %q, want it unchanged", s, got)
		}
	}
}

// The marker is the executor's contract, word for word: clients parse it.
func TestMarkerIsTheContractsWording(t *testing.T) {
	if got, want := Marker(1234), "\n[... 1234 bytes left out ...]\n"; got != want {
		t.Errorf("Marker(1234) = %q, want %q", got, want)
	}
}

// A stream's head that ends in the middle of a character and a tail that starts in one: the pieces are dropped and
// counted, so the marker still says how many bytes of the stream are missing.
func TestJoinCountsTheDroppedPieces(t *testing.T) {
	full := "ab€cd😀ef"
	head, tail := full[:3], full[len(full)-4:] // "ab" and the first byte of €; the last two bytes of 😀 and "ef"
	got := Join(head, tail, int64(len(full)-len(head)-len(tail)))
	if want := "ab" + Marker(int64(len(full)-len("ab")-len("ef"))) + "ef"; got != want {
		t.Errorf("Join = %q, want %q", got, want)
	}
}
