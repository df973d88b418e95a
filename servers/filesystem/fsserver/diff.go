package fsserver

import (
	"bytes"
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines a hunk shows around a change, as diff -u does.
const diffContext = 3

// maxDiffBytes keeps the diff of a sweeping replace_all from flooding the result, and bounds what building it holds.
const maxDiffBytes = 64 << 10

// diffCut starts the line that ends a diff cut at maxDiffBytes.
const diffCut = "(diff cut at "

// replaceAndDiff replaces every match of old in content by new and returns the new content, exactly size bytes
// (the caller has computed it, and checked it against the write cap, before anything is built), and a unified diff
// of the change. Edits are exact replacements, so the changed lines are known without a general diff algorithm:
// each run of matches that share lines is one region, and within a region only the lines that differ (after
// dropping a common head and tail) are shown as changed.
//
// It works in one pass over content with no per-line or per-match state: the time is linear in len(content) plus
// the size of the result, and the memory is the result plus at most maxDiffBytes of diff, whatever the number of
// lines or matches. Once the diff is full, the rest of the edit is applied without diffing.
//
// Why not github.com/aymanbagabas/go-udiff (gopls' diff, exported): its ToUnified takes the edits as a slice and
// splits the whole file into a string per line before rendering, and counts each edit's line from the start of the
// file, so an edit of every line of a 10 MiB file (TestEditMemory) costs hundreds of megabytes and quadratic time
// (measured: 10, 27 and 95 ms for 10,000, 20,000 and 40,000 lines); its Unified runs a general diff on top. Its
// ApplyUnified refuses context lines and "\ No newline at end of file", so it cannot check these diffs either;
// the tests apply them with GNU patch and a strict applier of their own.
func replaceAndDiff(name string, content, old, new []byte, matches, size int) ([]byte, string) {
	out := make([]byte, 0, size)
	d := newDiffWriter(name, content)
	copied := 0  // content[:copied] is in out
	regOld := -1 // where the open region starts in content (a line start); -1 when none is open
	regNew := 0  // where it starts in out
	lastEnd := 0 // the end of the last match
	for at := 0; ; {
		m := -1
		if i := bytes.Index(content[at:], old); i >= 0 {
			m = at + i
		}
		// A region ends before a match that starts on a later line than the last match ended on.
		if regOld >= 0 && (m < 0 || bytes.IndexByte(content[lastEnd-1:m], '\n') >= 0) {
			to := lineEnd(content, lastEnd-1)
			out = append(out, content[copied:to]...)
			copied = to
			d.change(regOld, content[regOld:to], out[regNew:])
			regOld = -1
		}
		if m < 0 {
			break
		}
		if regOld < 0 {
			from := copied + bytes.LastIndexByte(content[copied:m], '\n') + 1
			out = append(out, content[copied:from]...)
			copied = from
			regOld, regNew = from, len(out)
		}
		out = append(out, content[copied:m]...)
		out = append(out, new...)
		copied = m + len(old)
		lastEnd, at = copied, copied
	}
	out = append(out, content[copied:]...)
	return out, d.finish(matches)
}

// lineEnd is the offset just past the line that holds content[p]: after its newline, or the end of content.
func lineEnd(content []byte, p int) int {
	_, end := nextLine(content, p)
	return end
}

// diffWriter renders the changes of one edit, in order, as a unified diff of at most maxDiffBytes. It keeps one
// hunk open at a time: a change within 2*diffContext lines of the open hunk joins it, any other closes it.
type diffWriter struct {
	content []byte // the old text
	out     strings.Builder
	full    bool // the diff reached maxDiffBytes: the rest of the changes are not shown

	lineOff, lineNo int // content[:lineOff] holds lineNo lines: line numbers are counted forward, once

	open         bool
	from         int          // the hunk's first line (0-based, old numbering)
	end, endOff  int          // the line after its last change, and where that line starts in content
	oldLen       int          // lines of the old text the hunk covers
	newLen       int          // lines of the new text it covers
	delta        int          // new line number minus old line number before the open hunk
	d            int          // the open hunk's own lines added minus removed
	body         bytes.Buffer // the open hunk's lines
	bodyOverflow bool         // the body did not fit: the diff ends with this hunk
}

func newDiffWriter(name string, content []byte) *diffWriter {
	w := &diffWriter{content: content}
	fmt.Fprintf(&w.out, "--- a/%s\n+++ b/%s\n", name, name)
	return w
}

// lineAt is the 0-based number of the line that starts at off; calls must come with offsets that never decrease.
func (w *diffWriter) lineAt(off int) int {
	w.lineNo += bytes.Count(w.content[w.lineOff:off], []byte{'\n'})
	w.lineOff = off
	return w.lineNo
}

// change adds the change of the whole lines a (the old text from offset from) into the lines b.
func (w *diffWriter) change(from int, a, b []byte) {
	if w.full {
		return
	}
	// Drop the lines the two sides share at the head and the tail; the tail never reaches into the head.
	head, headLines := 0, 0
	for head < len(a) && head < len(b) {
		la, lb := lineEnd(a, head), lineEnd(b, head)
		if la != lb || !bytes.Equal(a[head:la], b[head:lb]) {
			break
		}
		head, headLines = la, headLines+1
	}
	ta, tb := len(a), len(b)
	for ta > head && tb > head {
		sa := head + bytes.LastIndexByte(a[head:ta-1], '\n') + 1
		sb := head + bytes.LastIndexByte(b[head:tb-1], '\n') + 1
		if !bytes.Equal(a[sa:ta], b[sb:tb]) {
			break
		}
		ta, tb = sa, sb
	}
	removed, added := a[head:ta], b[head:tb]
	at := w.lineAt(from) + headLines
	atOff := from + head

	if w.open && at-w.end > 2*diffContext {
		w.close()
		if w.full {
			return
		}
	}
	if !w.open {
		// Up to diffContext lines of context before the change.
		start, n := atOff, 0
		for ; n < diffContext && start > 0; n++ {
			start = bytes.LastIndexByte(w.content[:start-1], '\n') + 1
		}
		w.open, w.from, w.oldLen, w.newLen, w.d = true, at-n, 0, 0, 0
		w.body.Reset()
		w.bodyOverflow = false
		w.context(w.content[start:atOff])
	} else {
		w.context(w.content[w.endOff:atOff])
	}
	nr, na := countLines(removed), countLines(added)
	w.lines('-', removed)
	w.lines('+', added)
	w.oldLen += nr
	w.newLen += na
	w.d += na - nr
	w.end, w.endOff = at+nr, atOff+len(removed)
	if w.bodyOverflow {
		w.close() // the diff is full: nothing more is diffed
	}
}

// context adds the unchanged whole lines text to the open hunk.
func (w *diffWriter) context(text []byte) {
	n := countLines(text)
	w.lines(' ', text)
	w.oldLen += n
	w.newLen += n
}

// lines writes each line of text with prefix into the hunk's body, as long as the diff has room for it.
func (w *diffWriter) lines(prefix byte, text []byte) {
	for len(text) > 0 && !w.bodyOverflow {
		e := lineEnd(text, 0)
		line := text[:e]
		text = text[e:]
		room := maxDiffBytes - w.out.Len() - w.body.Len() - 64 // 64: the hunk header
		if len(line)+2 > room {
			// The first line that does not fit is shown cut, and the diff ends with this hunk.
			shown := cutUTF8(line, max(room, 0))
			w.body.WriteByte(prefix)
			w.body.Write(shown)
			fmt.Fprintf(&w.body, "… [%d more bytes]\n", len(line)-len(shown))
			w.bodyOverflow = true
			return
		}
		w.body.WriteByte(prefix)
		if l, ok := bytes.CutSuffix(line, []byte{'\n'}); ok {
			w.body.Write(l)
			w.body.WriteByte('\n')
		} else {
			w.body.Write(line)
			w.body.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// close ends the open hunk with up to diffContext lines of context after its last change and writes it out.
func (w *diffWriter) close() {
	if !w.open {
		return
	}
	w.open = false
	stop := w.endOff
	for n := 0; n < diffContext && stop < len(w.content); n++ {
		stop = lineEnd(w.content, stop)
	}
	w.context(w.content[w.endOff:stop])
	fmt.Fprintf(&w.out, "@@ -%s +%s @@\n", hunkRange(w.from, w.oldLen), hunkRange(w.from+w.delta, w.newLen))
	w.out.Write(w.body.Bytes())
	w.delta += w.d
	if w.bodyOverflow || w.out.Len() > maxDiffBytes {
		w.full = true
	}
}

// finish closes the last hunk and returns the diff, with a last line that says so when it was cut.
func (w *diffWriter) finish(replacements int) string {
	w.close()
	if w.full {
		fmt.Fprintf(&w.out, "%s%s: the edit made %d replacements; read the file to see the rest)\n", diffCut, sizeText(maxDiffBytes), replacements)
	}
	return w.out.String()
}

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
