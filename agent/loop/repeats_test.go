package loop

import (
	"strings"
	"testing"
)

// The rounds the loop check finds, on sequences of calls written as letters: a capital fails, a small letter
// succeeds (the same letter is the same tool and arguments).
func TestLoopFindsTheShortestRound(t *testing.T) {
	cases := []struct {
		calls string
		round string // "" when no loop
		times int
		fresh bool
	}{
		{"AAA", "A", 3, true},
		{"aaaaaa", "", 0, false},    // the same call succeeding is no loop
		{"AAaA", "", 0, false},      // the same call with the other outcome breaks the round
		{"bAbAbA", "bA", 3, true},   // the same write, the same failing test
		{"bAbAbAb", "Ab", 3, false}, // a round is counted once, when it ends, not again at each call of the next
		{"bAbAcA", "", 0, false},    // a write of other bytes breaks the round
		{"xyZxyZ", "xyZ", 2, true},
		{"wxyZwxyZ", "wxyZ", 2, true},
		{"vwxyZvwxyZ", "", 0, false}, // longer than RepeatLongest
		{"AAAA", "A", 4, true},       // the shortest round: not AA twice
	}
	for _, c := range cases {
		var rep repeats
		for _, l := range c.calls {
			rep.recent = append(rep.recent, callSeen{key: strings.ToLower(string(l)), failed: l >= 'A' && l <= 'Z'})
		}
		round, times, fresh := rep.loop()
		var got strings.Builder
		for _, s := range round {
			if s.failed {
				got.WriteString(strings.ToUpper(s.key))
			} else {
				got.WriteString(s.key)
			}
		}
		if got.String() != c.round || times != c.times || fresh != c.fresh {
			t.Errorf("%s: round %q %d times (fresh %v), want %q %d times (fresh %v)", c.calls, got.String(), times, fresh,
				c.round, c.times, c.fresh)
		}
	}
}
