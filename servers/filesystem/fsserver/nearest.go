package fsserver

import (
	"fmt"
	"strings"
)

// Bounds on the "nearest lines" hint of a failed edit.
const (
	maxNearestPairs = 400_000 // line comparisons before falling back to exact (trimmed) line matches
	maxNearestShown = 40      // lines shown
	maxNearestWidth = 240     // bytes shown of each line
)

// nearest describes where content comes closest to old, for the error of an edit whose old_text is not found:
// the window of lines that best matches old_text's lines, shown with line numbers, plus a hint when the difference
// is only whitespace or line endings.
func nearest(content, old string) string {
	want := strings.Split(strings.Trim(strings.ReplaceAll(old, "\r\n", "\n"), "\n"), "\n")
	for i := range want {
		want[i] = strings.TrimSpace(want[i])
	}
	if strings.TrimSpace(old) == "" {
		return "old_text is only whitespace; give the text to replace."
	}
	lines := strings.Split(content, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	n, k := len(lines), len(want)
	// score[s+k-1] rates the window of k lines that starts at line index s (which may start before the file).
	score := make([]float64, n+k)
	if n*k <= maxNearestPairs {
		for i, l := range lines {
			t := strings.TrimSpace(l)
			for j, w := range want {
				score[i-j+k-1] += similarity(t, w)
			}
		}
	} else {
		at := map[string][]int{}
		for j, w := range want {
			if w != "" {
				at[w] = append(at[w], j)
			}
		}
		for i, l := range lines {
			for _, j := range at[strings.TrimSpace(l)] {
				score[i-j+k-1]++
			}
		}
	}
	best := 0
	for s := range score {
		if score[s] > score[best] {
			best = s
		}
	}
	if score[best] < 0.5 {
		return "No similar lines were found; read the file with sandbox_read_file to see its current content."
	}
	start := best - (k - 1)
	from, to := max(0, start), min(n, start+k)
	var b strings.Builder
	if to-from == 1 {
		fmt.Fprintf(&b, "The most similar line is line %d", from+1)
	} else {
		fmt.Fprintf(&b, "The most similar lines are %d-%d", from+1, to)
	}
	same := to-from == k
	for j := 0; same && j < k; j++ {
		same = strings.TrimSpace(lines[from+j]) == want[j]
	}
	switch {
	case strings.Contains(content, "\r\n") && !strings.Contains(old, "\r\n"):
		b.WriteString(" (the file has CRLF line endings: old_text must end its lines with \\r\\n too)")
	case same:
		b.WriteString(" (they differ from old_text only in whitespace or indentation)")
	}
	b.WriteString(":\n")
	for i := from; i < to && i < from+maxNearestShown; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, clip(strings.TrimSuffix(lines[i], "\r"), maxNearestWidth))
	}
	if to-from > maxNearestShown {
		fmt.Fprintf(&b, "(%d more lines)\n", to-from-maxNearestShown)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// similarity rates two trimmed lines from 0 to 1: 1 when equal, otherwise the share of the longer line covered by
// their common head and tail. Cheap, and good at the usual near misses: a changed word, a missed comma.
func similarity(a, b string) float64 {
	if a == b {
		if a == "" {
			return 0.1 // blank lines agree, but say little
		}
		return 1
	}
	if a == "" || b == "" {
		return 0
	}
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return float64(p+s) / float64(max(len(a), len(b))) * 0.9
}
