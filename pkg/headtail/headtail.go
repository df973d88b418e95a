// Package headtail shortens text by keeping its beginning and its end around one marker that says how many bytes
// were left out: compiler errors sit at the top of an output and test summaries at the bottom. It is the one way
// goalbox shortens output, so every reader (a client of the executor, the agent's model) sees the same marker, and
// it never splits a UTF-8 character: a cut that would is moved so that the whole character is left out.
package headtail

import (
	"fmt"
	"unicode/utf8"
)

// Marker is what stands between the head and the tail: "\n[... N bytes left out ...]\n". The executor's tool
// contract names it (protocol.RunCommandOutput), so clients may parse N.
func Marker(omitted int64) string { return fmt.Sprintf("\n[... %d bytes left out ...]\n", omitted) }

// Keep returns s unchanged when it is at most head+tail bytes long; otherwise its first head bytes and its last
// tail bytes (each cut moved to a character boundary) joined by the Marker.
func Keep(s string, head, tail int) string {
	head, tail = max(head, 0), max(tail, 0)
	if len(s) <= head+tail {
		return s
	}
	return Join(s[:head], s[len(s)-tail:], int64(len(s)-head-tail))
}

// Join puts together a head and a tail that were kept of a longer text, omitted bytes having been left out between
// them (a stream keeps its ends as they arrive: see the executor's capped writer). A character cut at the end of
// head or at the start of tail is dropped and counted as left out.
func Join(head, tail string, omitted int64) string {
	h := TrimCutEnd(head)
	t := trimCutStart(tail)
	omitted += int64(len(head)-len(h)) + int64(len(tail)-len(t))
	return h + Marker(omitted) + t
}

// TrimCutEnd drops an incomplete UTF-8 sequence at the end of s, left by cutting a longer text or buffer.
func TrimCutEnd[T string | []byte](s T) T {
	for i := 1; i <= utf8.UTFMax && i <= len(s); i++ {
		if utf8.RuneStart(s[len(s)-i]) {
			if !utf8.FullRune([]byte(s[len(s)-i:])) {
				return s[:len(s)-i]
			}
			return s
		}
	}
	return s
}

// trimCutStart drops the continuation bytes at the start of s whose first byte was cut off (at most three: more
// is not UTF-8, and is left alone).
func trimCutStart(s string) string {
	for i := 0; i < utf8.UTFMax && i < len(s); i++ {
		if utf8.RuneStart(s[i]) {
			return s[i:]
		}
	}
	if len(s) < utf8.UTFMax {
		return "" // nothing but the rest of a cut character
	}
	return s
}
