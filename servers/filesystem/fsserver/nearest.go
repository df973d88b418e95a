package fsserver

import (
	"bytes"
	"fmt"
	"strings"
)

// Bounds on the "nearest lines" hint of a failed edit. Together they make its memory and time independent of the
// file and of old_text: it keeps one score per line of old_text it compares, never one per line of the file.
const (
	maxNearestWant  = 200        // lines of old_text compared (the first ones); the window shown is still old_text's size
	maxNearestPairs = 400_000    // line comparisons before falling back to exact (trimmed) line matches
	maxNearestWork  = 20_000_000 // exact line matches counted before the hint stops looking further down the file
	maxSimilarScan  = 256        // bytes of a line's head and of its tail compared by similarity
	maxNearestShown = 40         // lines shown
	maxNearestWidth = 240        // bytes shown of each line
)

// nearest describes where content comes closest to old, for the error of an edit whose old_text is not found:
// the window of lines that best matches old_text's lines, shown with line numbers, plus a hint when the difference
// is only whitespace or line endings.
func nearest(content []byte, old string) string {
	if strings.TrimSpace(old) == "" {
		return "old_text is only whitespace; give the text to replace."
	}
	norm := old
	if strings.Contains(old, "\r\n") {
		norm = strings.ReplaceAll(old, "\r\n", "\n") // a copy of old_text at most, which the request holds already
	}
	trimmed := strings.Trim(norm, "\n")
	k := strings.Count(trimmed, "\n") + 1 // old_text's lines: the size of the window shown
	var want []string                     // its first lines, trimmed: what is compared
	for rest, more := trimmed, true; more && len(want) < maxNearestWant; {
		var line string
		line, rest, more = strings.Cut(rest, "\n")
		want = append(want, strings.TrimSpace(line))
	}
	kw := len(want)
	n := countLines(content)

	// The window that starts at line s (0-based; it may start before the file) scores the sum, over j, of how like
	// want[j] line s+j is. Lines are scored in order, so only the kw windows that line i touches are open: a ring
	// of kw scores, each window judged as soon as its last line is scored.
	ring := make([]float64, kw)
	slot := func(s int) *float64 { return &ring[((s%kw)+kw)%kw] }
	best, bestScore, judged := 0, -1.0, false
	judge := func(s int) {
		if sc := *slot(s); !judged || sc > bestScore {
			best, bestScore, judged = s, sc, true
		}
		*slot(s) = 0
	}
	var at map[string][]int // exact matching: which lines of want each trimmed text is
	if n*kw > maxNearestPairs {
		at = map[string][]int{}
		for j, w := range want {
			if w != "" {
				at[w] = append(at[w], j)
			}
		}
	}
	i, work := 0, 0 // lines scored; exact matches counted
	for off := 0; i < n && work <= maxNearestWork; i++ {
		var line []byte
		line, off = nextLine(content, off)
		if s := i - kw; s > -kw {
			judge(s)
		}
		t := bytes.TrimSpace(line)
		if at == nil {
			for j, w := range want {
				*slot(i - j) += similarity(t, w)
			}
			continue
		}
		js := at[string(t)] // no copy: the compiler looks up by the bytes
		for _, j := range js {
			*slot(i - j)++
		}
		work += len(js) + 1
	}
	for s := max(i-kw, 1-kw); s < i; s++ {
		judge(s)
	}
	if bestScore < 0.5 {
		return "No similar lines were found; read the file with sandbox_read_file to see its current content."
	}
	from, to := max(0, best), min(n, best+k)
	var b strings.Builder
	if to-from == 1 {
		fmt.Fprintf(&b, "The most similar line is line %d", from+1)
	} else {
		fmt.Fprintf(&b, "The most similar lines are %d-%d", from+1, to)
	}
	switch {
	case bytes.Contains(content, []byte("\r\n")) && !strings.Contains(old, "\r\n"):
		b.WriteString(" (the file has CRLF line endings: old_text must end its lines with \\r\\n too)")
	case to-from == k && sameTrimmed(content, from, trimmed):
		b.WriteString(" (they differ from old_text only in whitespace or indentation)")
	}
	if i < n {
		fmt.Fprintf(&b, " among lines 1-%d (the rest of the file was not compared)", i)
	}
	b.WriteString(":\n")
	off := lineOffset(content, from)
	for i := from; i < to && i < from+maxNearestShown; i++ {
		var line []byte
		line, off = nextLine(content, off)
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, clip(string(bytes.TrimSuffix(line, []byte{'\r'})), maxNearestWidth))
	}
	if to-from > maxNearestShown {
		fmt.Fprintf(&b, "(%d more lines)\n", to-from-maxNearestShown)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// nextLine returns the line of content that starts at off, without its newline, and where the next one starts.
func nextLine(content []byte, off int) ([]byte, int) {
	if i := bytes.IndexByte(content[off:], '\n'); i >= 0 {
		return content[off : off+i], off + i + 1
	}
	return content[off:], len(content)
}

// lineOffset is where the 0-based line n of content starts.
func lineOffset(content []byte, n int) int {
	off := 0
	for ; n > 0 && off < len(content); n-- {
		_, off = nextLine(content, off)
	}
	return off
}

// sameTrimmed reports whether the lines of content from line from on equal the lines of old, each trimmed of
// surrounding whitespace (the caller has checked that the file has that many lines).
func sameTrimmed(content []byte, from int, old string) bool {
	off := lineOffset(content, from)
	for rest, more := old, true; more; {
		var want string
		want, rest, more = strings.Cut(rest, "\n")
		var line []byte
		line, off = nextLine(content, off)
		if string(bytes.TrimSpace(line)) != strings.TrimSpace(want) {
			return false
		}
	}
	return true
}

// similarity rates two trimmed lines from 0 to 1: 1 when equal, otherwise the share of the longer line covered by
// their common head and tail (each compared over at most maxSimilarScan bytes, so a pair of megabyte lines costs
// no more than a pair of short ones). Cheap, and good at the usual near misses: a changed word, a missed comma.
func similarity(a []byte, b string) float64 {
	if string(a) == b {
		if b == "" {
			return 0.1 // blank lines agree, but say little
		}
		return 1
	}
	if len(a) == 0 || b == "" {
		return 0
	}
	p := 0
	for p < len(a) && p < len(b) && p < maxSimilarScan && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && s < maxSimilarScan && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return float64(p+s) / float64(max(len(a), len(b))) * 0.9
}
