package fsserver

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCheckpointFileDiffApplies: the diff of two random texts (few distinct lines, so that many match and the
// regions interleave), applied strictly to the old one, gives the new one, and is no larger than the one-region
// diff (prefix and suffix only) of the same change. Past maxDiffSteps the one-region fallback must apply too.
func TestCheckpointFileDiffApplies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	text := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(string(rune('a' + rng.IntN(4))))
			b.WriteByte('\n')
		}
		if rng.IntN(4) == 0 {
			b.WriteString("no newline")
		}
		return b.String()
	}
	get := func(s string) content { return func(*mEntry) ([]byte, error) { return []byte(s), nil } }
	for i := range 2000 {
		n := 1 + rng.IntN(30)
		if i%100 == 0 {
			n = 1200 // past maxDiffSteps
		}
		old, new := text(n), text(rng.IntN(30)+n/2)
		d, err := fileDiff("f", &mEntry{Kind: kindFile}, &mEntry{Kind: kindFile}, get(old), get(new))
		if err != nil {
			t.Fatal(err)
		}
		if old == new {
			continue
		}
		got, err := applyUnified(old, d)
		if err != nil || got != new {
			t.Fatalf("case %d: the diff does not apply (%v)\nold %q\nnew %q\ndiff\n%s", i, err, old, new, d)
		}
		whole := newDiffWriter("f", []byte(old))
		whole.change(0, []byte(old), []byte(new))
		whole.close()
		if n < 100 && strings.Count(d, "\n") > strings.Count(whole.out.String(), "\n") {
			t.Fatalf("case %d: the diff is longer than one region:\n%s\nvs\n%s", i, d, whole.out.String())
		}
	}
}
