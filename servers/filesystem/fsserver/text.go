package fsserver

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/goalbox/goalbox/pkg/headtail"
)

// sniffLen is how much of a file's head is checked for a NUL byte, as git and grep do.
const sniffLen = 8 << 10

// binaryReason says why head (the first bytes of a file) marks it as binary, or "" for text. full says head is the
// whole file; otherwise a multi-byte character cut at the end of head is not held against it.
func binaryReason(head []byte, full bool) string {
	if i := bytes.IndexByte(head[:min(len(head), sniffLen)], 0); i >= 0 {
		return fmt.Sprintf("it has a NUL byte at offset %d", i)
	}
	if !full {
		head = headtail.TrimCutEnd(head)
	}
	if !utf8.Valid(head) {
		return "it is not valid UTF-8 text"
	}
	return ""
}

// countLines counts lines the way the tools report them: a final newline does not start another line.
func countLines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// clip cuts s to at most n bytes on a character boundary, saying how much was left out.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	c := cutUTF8([]byte(s), n)
	return string(c) + fmt.Sprintf("… [%d more bytes]", len(s)-len(c))
}

// cutUTF8 cuts b to at most n bytes without splitting a character.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// sizeText is a byte count for people: "256 KiB", "10 MiB", "1000 bytes".
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
