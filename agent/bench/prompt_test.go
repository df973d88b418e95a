package bench

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goalbox/goalbox/pkg/headtail"
)

// Test output full of multi-byte characters (a pytest diff of accented strings) is cut on character boundaries, and
// the model is told how much was left out with the same marker as everywhere else.
func TestRetryPromptCutsOnCharactersWithTheOneMarker(t *testing.T) {
	ex := Exercise{Lang: "python", Slug: "word-count", Solution: []string{"word_count.py"}}
	for shift := range 4 {
		out := strings.Repeat("x", shift) + strings.Repeat("€😀é", 4<<10)
		p, err := RetryPrompt(ex, Workspace{Rel: ex.Slug}, Retry{Output: out})
		must(t, err)
		if !utf8.ValidString(p) {
			t.Errorf("shift %d: the retry prompt splits a character", shift)
		}
		var n int64
		if i := strings.Index(p, "\n[... "); i < 0 {
			t.Errorf("shift %d: no marker", shift)
		} else if _, err := fmt.Sscanf(p[i:], "\n[... %d bytes left out ...]\n", &n); err != nil || !strings.Contains(p, headtail.Marker(n)) {
			t.Errorf("shift %d: the marker is not headtail's: %.60q (%v)", shift, p[i:], err)
		}
	}
}

// The bar is named when the counts are known, and the promise to put the best try back only when the runner can.
func TestRetryPromptNamesTheBar(t *testing.T) {
	ex := Exercise{Lang: "python", Slug: "proverb", Solution: []string{"proverb.py"}}
	for _, c := range []struct {
		r           Retry
		want, never []string
	}{
		{Retry{Output: "out", Tests: 8, BestTry: 1, BestPassed: 6, LastTry: 1, LastPassed: 6, Keeps: true},
			[]string{"Try 1 passed 6 of 8 tests.\nThat is the bar: if the code this try leaves passes fewer tests, try 1's code is put back"}, nil},
		{Retry{Output: "out", Tests: 8, BestTry: 1, BestPassed: 6, LastTry: 1, LastPassed: 6},
			[]string{"Try 1 passed 6 of 8 tests."}, []string{"bar"}},
		{Retry{Output: "out", Tests: 8, BestTry: 1, BestPassed: 6, LastTry: 2, LastPassed: 1, Keeps: true, Regression: "the hint"},
			[]string{"The best try so far, try 1, passed 6 of 8 tests; try 2 passed 1.\nThat is the bar", "put back and graded\ninstead.\n\nthe hint\n\nThe tests are correct"}, nil},
		{Retry{Output: "out", BestTry: 1, LastTry: 1, Keeps: true}, nil, []string{"passed", "bar"}}, // no tests named: no count
	} {
		p, err := RetryPrompt(ex, Workspace{Rel: ex.Slug}, c.r)
		must(t, err)
		for _, w := range c.want {
			if !strings.Contains(p, w) {
				t.Errorf("%+v: the prompt lacks %q:\n%s", c.r, w, p)
			}
		}
		for _, w := range c.never {
			if strings.Contains(p, w) {
				t.Errorf("%+v: the prompt says %q:\n%s", c.r, w, p)
			}
		}
	}
}
