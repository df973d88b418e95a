package fsserver

import (
	"fmt"
	"sort"
	"strings"
)

// diffContext is how many unchanged lines a hunk shows around a change, as diff -u does.
const diffContext = 3

// maxDiffBytes keeps the diff of a sweeping replace_all from flooding the result.
const maxDiffBytes = 64 << 10

// change replaces the lines of the old text from index at (0-based) by added.
type change struct {
	at             int
	removed, added []string
}

// replaceAndDiff replaces old by new at the byte offsets idx of content and returns the new content and a unified
// diff of the change. Edits are exact replacements, so the changed lines are known without a general diff
// algorithm: each run of matches that share lines is one region, and within a region only the lines that differ
// (after dropping a common head and tail) are shown as changed.
func replaceAndDiff(name, content, old, new string, idx []int) (string, string) {
	starts := lineStarts(content)
	lineOf := func(off int) int { return sort.SearchInts(starts, off+1) - 1 }
	var b strings.Builder
	var changes []change
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
		changes = append(changes, lineChange(first, splitLines(region), splitLines(replaced)))
		i = j
	}
	b.WriteString(content[done:])
	return b.String(), unified(name, splitLines(content), changes)
}

// lineChange is the change from the lines a to the lines b, which start at line index at, without their common
// head and tail.
func lineChange(at int, a, b []string) change {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return change{at: at + p, removed: a[p : len(a)-s], added: b[p : len(b)-s]}
}

// unified renders changes (in order, not overlapping) to the lines old as a unified diff.
func unified(name string, old []string, changes []change) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", name, name)
	delta := 0 // new line index minus old line index, before the current hunk
	for i := 0; i < len(changes); {
		j := i + 1
		for j < len(changes) && changes[j].at-end(changes[j-1]) <= 2*diffContext {
			j++
		}
		from := max(0, changes[i].at-diffContext)
		to := min(len(old), end(changes[j-1])+diffContext)
		var body strings.Builder
		oldLen, newLen, d := 0, 0, 0
		pos := from
		for _, c := range changes[i:j] {
			for ; pos < c.at; pos++ {
				writeLine(&body, ' ', old[pos])
				oldLen++
				newLen++
			}
			for _, l := range c.removed {
				writeLine(&body, '-', l)
			}
			for _, l := range c.added {
				writeLine(&body, '+', l)
			}
			oldLen += len(c.removed)
			newLen += len(c.added)
			d += len(c.added) - len(c.removed)
			pos = end(c)
		}
		for ; pos < to; pos++ {
			writeLine(&body, ' ', old[pos])
			oldLen++
			newLen++
		}
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", hunkRange(from, oldLen), hunkRange(from+delta, newLen))
		b.WriteString(body.String())
		delta += d
		i = j
		if b.Len() > maxDiffBytes {
			return clip(b.String(), maxDiffBytes) + "\n(diff cut: it is larger than the limit)"
		}
	}
	return b.String()
}

func end(c change) int { return c.at + len(c.removed) }

// hunkRange is "start,len" with a 1-based start; an empty range names the line before it, as diff -u does.
func hunkRange(from, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", from)
	}
	if n == 1 {
		return fmt.Sprint(from + 1)
	}
	return fmt.Sprintf("%d,%d", from+1, n)
}

func writeLine(b *strings.Builder, prefix byte, line string) {
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
func lineStarts(content string) []int {
	starts := []int{0}
	for i := 0; i < len(content); i++ {
		if content[i] == '\n' && i+1 < len(content) {
			starts = append(starts, i+1)
		}
	}
	return starts
}
