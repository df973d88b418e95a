package fsserver

// The diff and the nearest-lines hint done the simple way: unbounded in memory (a slice entry
// per line and per match). FuzzEdit holds the bounded versions to them on small inputs.

import (
	"fmt"
	"sort"
	"strings"
)

// refChange replaces the lines of the old text from index at (0-based) by added.
type refChange struct {
	at             int
	removed, added []string
}

// replaceAndDiff replaces old by new at the byte offsets idx of content and returns the new content and a unified
// diff of the change. Edits are exact replacements, so the changed lines are known without a general diff
// algorithm: each run of matches that share lines is one region, and within a region only the lines that differ
// (after dropping a common head and tail) are shown as changed.
func refReplaceAndDiff(name, content, old, new string, idx []int) (string, string) {
	starts := refLineStarts(content)
	lineOf := func(off int) int { return sort.SearchInts(starts, off+1) - 1 }
	var b strings.Builder
	var changes []refChange
	done := 0 // content up to here is already in b
	for i := 0; i < len(idx); {
		first, last := lineOf(idx[i]), lineOf(idx[i]+len(old)-1)
		j := i + 1
		for j < len(idx) && lineOf(idx[j]) <= last {
			last = lineOf(idx[j] + len(old) - 1)
			j++
		}
		from, to := starts[first], len(content)
		if last+1 < len(starts) {
			to = starts[last+1]
		}
		region := content[from:to]
		replaced := strings.Replace(region, old, new, j-i)
		b.WriteString(content[done:from])
		b.WriteString(replaced)
		done = to
		changes = append(changes, refLineChange(first, splitLines(region), splitLines(replaced)))
		i = j
	}
	b.WriteString(content[done:])
	return b.String(), refUnified(name, splitLines(content), changes)
}

// lineChange is the change from the lines a to the lines b, which start at line index at, without their common
// head and tail.
func refLineChange(at int, a, b []string) refChange {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return refChange{at: at + p, removed: a[p : len(a)-s], added: b[p : len(b)-s]}
}

// unified renders changes (in order, not overlapping) to the lines old as a unified diff.
func refUnified(name string, old []string, changes []refChange) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", name, name)
	delta := 0 // new line index minus old line index, before the current hunk
	for i := 0; i < len(changes); {
		j := i + 1
		for j < len(changes) && changes[j].at-refEnd(changes[j-1]) <= 2*diffContext {
			j++
		}
		from := max(0, changes[i].at-diffContext)
		to := min(len(old), refEnd(changes[j-1])+diffContext)
		var body strings.Builder
		oldLen, newLen, d := 0, 0, 0
		pos := from
		for _, c := range changes[i:j] {
			for ; pos < c.at; pos++ {
				refWriteLine(&body, ' ', old[pos])
				oldLen++
				newLen++
			}
			for _, l := range c.removed {
				refWriteLine(&body, '-', l)
			}
			for _, l := range c.added {
				refWriteLine(&body, '+', l)
			}
			oldLen += len(c.removed)
			newLen += len(c.added)
			d += len(c.added) - len(c.removed)
			pos = refEnd(c)
		}
		for ; pos < to; pos++ {
			refWriteLine(&body, ' ', old[pos])
			oldLen++
			newLen++
		}
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", refHunkRange(from, oldLen), refHunkRange(from+delta, newLen))
		b.WriteString(body.String())
		delta += d
		i = j
		if b.Len() > maxDiffBytes {
			return clip(b.String(), maxDiffBytes) + "\n(diff cut: it is larger than the limit)"
		}
	}
	return b.String()
}

func refEnd(c refChange) int { return c.at + len(c.removed) }

// hunkRange is "start,len" with a 1-based start; an empty range names the line before it, as diff -u does.
func refHunkRange(from, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", from)
	}
	if n == 1 {
		return fmt.Sprint(from + 1)
	}
	return fmt.Sprintf("%d,%d", from+1, n)
}

func refWriteLine(b *strings.Builder, prefix byte, line string) {
	b.WriteByte(prefix)
	if s, ok := strings.CutSuffix(line, "\n"); ok {
		b.WriteString(s)
		b.WriteByte('\n')
		return
	}
	b.WriteString(line)
	b.WriteString("\n\\ No newline at end of file\n")
}

// splitLines splits s into lines that keep their "\n"; the last one lacks it when s does not end in a newline.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineStarts are the byte offsets where content's lines start.
func refLineStarts(content string) []int {
	starts := []int{0}
	for i := 0; i < len(content); i++ {
		if content[i] == '\n' && i+1 < len(content) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// refNearestPairs is the old hint's bound on line comparisons.
const refNearestPairs = 400_000

// refNearest describes where content comes closest to old, for the error of an edit whose old_text is not found:
// the window of lines that best matches old_text's lines, shown with line numbers, plus a hint when the difference
// is only whitespace or line endings.
func refNearest(content, old string) string {
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
	if n*k <= refNearestPairs {
		for i, l := range lines {
			t := strings.TrimSpace(l)
			for j, w := range want {
				score[i-j+k-1] += refSimilarity(t, w)
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

// refSimilarity rates two trimmed lines from 0 to 1: 1 when equal, otherwise the share of the longer line covered by
// their common head and tail. Cheap, and good at the usual near misses: a changed word, a missed comma.
func refSimilarity(a, b string) float64 {
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
