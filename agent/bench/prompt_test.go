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
		p, err := RetryPrompt(ex, Workspace{Rel: ex.Slug}, out)
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
