package mcpserve

import (
	"bytes"
	"encoding/json"
	"slices"
)

// LongFields is implemented by a tool's output whose JSON has members that can be long (a command's stdout and
// stderr): their JSON names. Coding agents cut a long tool result before their model sees it, each its own way: a
// head of a few kilobytes (Qwen Code), a 2 KB preview with the rest in a file (Claude Code), only the lines under
// about 50 KB (opencode), a head and a tail (Codex). So the result's text puts every other member (the facts: exit
// code, timed out, truncated, where the whole output is, and any field added later) first, on a short first line,
// and each long member on a line of its own after them, in that order: whatever a client keeps, it keeps the facts.
// The text is still one JSON object (a newline is whitespace between members); structuredContent has the same
// order without the newlines (a stdio message is one line).
type LongFields interface {
	LongFields() []string
}

// factsFirst reorders the JSON object obj so that the members named long come last, and returns it twice: as the
// text (a newline before each long member) and compact (for structuredContent). ok is false when obj is not an
// object (the caller keeps it as it is).
func factsFirst(obj []byte, long []string) (text, compact []byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	type member struct{ from, to int } // obj[from:to] is `"key":value`
	var facts, longs []member
	for dec.More() {
		start := int(dec.InputOffset())
		key, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, nil, false
		}
		m := member{start, int(dec.InputOffset())}
		if obj[m.from] == ',' {
			m.from++
		}
		if name, _ := key.(string); slices.Contains(long, name) {
			longs = append(longs, m)
		} else {
			facts = append(facts, m)
		}
	}
	write := func(sep string) []byte {
		var b bytes.Buffer
		b.Grow(len(obj) + len(longs))
		b.WriteByte('{')
		for i, m := range facts {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(obj[m.from:m.to])
		}
		for i, m := range longs {
			if i > 0 || len(facts) > 0 {
				b.WriteByte(',')
			}
			b.WriteString(sep)
			b.Write(obj[m.from:m.to])
		}
		b.WriteByte('}')
		return b.Bytes()
	}
	return write("\n"), write(""), true
}
