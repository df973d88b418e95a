package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/goalbox/goalbox/pkg/headtail"
)

// What the model sees of a tool result is compact JSON: the structured result as the server gave it, or
// {"error": message}, or {"text": text} from a server with no structured output. When that is over the budget, the
// longest strings in it (stdout, file content) are cut in their middle, keeping head and tail around headtail's
// marker, which says how much was left out: compiler errors sit at the top of an output and test summaries at the bottom.

// compactResult renders r for the model within budget bytes (a best effort: structure and markers may exceed a
// tiny budget).
func compactResult(r ToolResult, budget int) string {
	s, _ := compact(r, budget)
	return s
}

// compact is compactResult saying whether something was left out.
func compact(r ToolResult, budget int) (string, bool) {
	var v any
	switch {
	case r.IsError:
		v = map[string]any{"error": r.Text}
	case r.Decoded != nil: // decoded once already by the MCP client
		v = r.Decoded
	case len(r.Structured) > 0:
		d := json.NewDecoder(bytes.NewReader(r.Structured))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			v = map[string]any{"text": r.Text}
		}
	default:
		v = map[string]any{"text": r.Text}
	}
	return fitJSON(v, budget)
}

// fitJSON marshals v, cutting its longest strings until the result fits budget; cut says it had to.
func fitJSON(v any, budget int) (string, bool) {
	// Sizes are counted, not marshalled: a 256 KiB output is encoded once, after it was cut. Work in encoded
	// bytes: a newline is one byte in a string and two in JSON.
	var ptrs []*string
	collectStrings(&v, &ptrs)
	enc := make([]int, len(ptrs))
	size, maxLen := jsonLen(v), 0 // jsonLen counts the collected strings as ""
	for i, p := range ptrs {
		enc[i] = quotedLen(*p) - 2
		size += enc[i]
		maxLen = max(maxLen, enc[i])
	}
	excess := size - budget
	if excess <= 0 || budget <= 0 {
		return marshalCompact(v), false
	}
	// Water-filling: the largest cap c (encoded bytes) such that cutting every longer string to c saves enough,
	// markers included.
	const markerCost = 40
	saved := func(c int) int {
		n := 0
		for _, l := range enc {
			if l > c+markerCost {
				n += l - c - markerCost
			}
		}
		return n
	}
	c := max(sort.Search(maxLen+1, func(c int) bool { return saved(c) < excess })-1, 0)
	for i, p := range ptrs {
		if enc[i] > c+markerCost {
			keep := int(float64(c) * float64(len(*p)) / float64(enc[i])) // back to raw bytes at this string's ratio
			*p = keepEnds(*p, keep)
		}
	}
	out := marshalCompact(v)
	if len(out) > budget+budget/4 {
		// The bulk is structure (a long listing), not strings: cut the JSON text itself.
		out = marshalCompact(map[string]any{"truncated_json": keepEnds(out, budget)})
	}
	return out, true
}

// jsonLen is len(marshalCompact(v)) for a decoded JSON value, counted without encoding it, except that the strings
// collectStrings replaced by pointers count as empty.
func jsonLen(v any) int {
	switch t := v.(type) {
	case nil:
		return 4
	case bool:
		if t {
			return 4
		}
		return 5
	case json.Number:
		return len(t)
	case string:
		return quotedLen(t)
	case *string: // a string collectStrings took out: counted by the caller
		return 2
	case map[string]any:
		n := 1 + max(len(t), 1) // braces and the commas between entries
		for k, e := range t {
			n += quotedLen(k) + 1 + jsonLen(e)
		}
		return n
	case []any:
		n := 1 + max(len(t), 1)
		for _, e := range t {
			n += jsonLen(e)
		}
		return n
	}
	return len(marshalCompact(v))
}

// quotedLen is the length of s as a JSON string without HTML escaping, as encoding/json writes it.
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// collectStrings finds every string in a decoded JSON value, so they can be shortened in place.
func collectStrings(v *any, out *[]*string) {
	switch t := (*v).(type) {
	case string:
		s := t
		p := &s
		*out = append(*out, p)
		*v = p
	case map[string]any:
		for k := range t {
			e := t[k]
			collectStrings(&e, out)
			t[k] = e
		}
	case []any:
		for i := range t {
			collectStrings(&t[i], out)
		}
	}
}

// keepEnds keeps about n bytes of s, half from each end, around headtail's marker.
func keepEnds(s string, n int) string { return headtail.Keep(s, n/2, n-n/2) }

// marshalCompact is json.Marshal without HTML escaping: code is full of <, > and &, and \u003c costs tokens.
func marshalCompact(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf(`{"error":%q}`, "result could not be encoded: "+err.Error())
	}
	return string(bytes.TrimRight(b.Bytes(), "\n"))
}

// shortenArgs replaces string values longer than keep in a JSON object with a note, keeping it valid JSON. Arguments
// that are not a JSON object are left alone.
func shortenArgs(args string, keep int) string {
	if len(args) <= keep {
		return args
	}
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader([]byte(args)))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return args
	}
	changed := false
	for k, e := range v {
		if s, ok := e.(string); ok && len(s) > keep {
			v[k] = fmt.Sprintf("[%d bytes elided from the conversation]", len(s))
			changed = true
		}
	}
	if !changed {
		return args
	}
	return marshalCompact(v)
}
