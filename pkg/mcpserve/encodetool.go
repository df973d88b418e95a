package mcpserve

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodeToolResult encodes a tool result to the same bytes as the go-sdk, in one pass over each large value: plain
// text contents with their text escaped once; any other content item (the image of a file read, a resource link)
// as the SDK's encoder writes it, by its own MarshalJSON with HTML characters escaped; structuredContent copied when
// it is a tool output whose JSON AddTool already made (jsonOutput), else encoded from its Go value (or compacted,
// when the SDK made it json.RawMessage). The other members (_meta, isError, resultType and whatever a later SDK
// adds) and their order come from the SDK's own MarshalJSON of the result without its content, which is short: the
// content takes the place of its "content":null there. The JSON is in a buffer of encodeBufs, which the caller owns;
// ok is false when a value does not encode, and the caller leaves the result to the SDK, which reports the error.
func encodeToolResult(r *mcp.CallToolResult) (_ *bytes.Buffer, ok bool) {
	rest := *r
	rest.Content, rest.StructuredContent = nil, nil
	envelope, err := rest.MarshalJSON()
	if err != nil {
		return nil, false
	}
	from, to, found := memberSpan(envelope, "content")
	if !found {
		return nil, false
	}

	buf := encodeBufs.Get().(*bytes.Buffer)
	buf.Reset()
	fail := func() (*bytes.Buffer, bool) {
		encodeBufs.Put(buf)
		return nil, false
	}
	buf.Write(envelope[:from])
	// HTML characters are escaped, as the SDK's MarshalJSON of a result escapes them.
	enc := json.NewEncoder(buf)
	buf.WriteString(`"content":[`)
	for i, c := range r.Content {
		if i > 0 {
			buf.WriteByte(',')
		}
		if t, plain := c.(*mcp.TextContent); plain && t != nil && t.Meta == nil && t.Annotations == nil {
			buf.WriteString(`{"type":"text","text":`)
			if enc.Encode(t.Text) != nil {
				return fail()
			}
			trimNewline(buf)
			buf.WriteByte('}')
			continue
		}
		// encoding/json calls the item's MarshalJSON and compacts its output, escaping HTML, as it does inside
		// the SDK's MarshalJSON of the whole result.
		if enc.Encode(c) != nil {
			return fail()
		}
		trimNewline(buf)
	}
	buf.WriteByte(']')
	if r.StructuredContent != nil {
		buf.WriteString(`,"structuredContent":`)
		if out, made := r.StructuredContent.(jsonOutput); made {
			// json.Marshal's own output: compact, HTML escaped, what the SDK's encoder would write for it.
			buf.Write(out.json)
		} else if raw, isRaw := r.StructuredContent.(json.RawMessage); isRaw {
			// Compacted as the SDK would; it validates the JSON, which a copy would not.
			if json.Compact(buf, raw) != nil {
				return fail()
			}
		} else {
			if enc.Encode(r.StructuredContent) != nil {
				return fail()
			}
			trimNewline(buf)
		}
	}
	buf.Write(envelope[to:])
	return buf, true
}

// memberSpan finds the top-level member key of the JSON object obj: obj[from:to] is the member with its key, after
// any comma before it.
func memberSpan(obj []byte, key string) (from, to int, found bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, false
	}
	for dec.More() {
		start := int(dec.InputOffset())
		t, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return 0, 0, false
		}
		if t == key {
			if obj[start] == ',' {
				start++
			}
			return start, int(dec.InputOffset()), true
		}
	}
	return 0, 0, false
}

// encodeBufs are the buffers results are encoded and messages spliced in: a 16 KiB read then allocates none.
var encodeBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// trimNewline removes the newline json.Encoder writes after each value.
func trimNewline(buf *bytes.Buffer) { buf.Truncate(buf.Len() - 1) }
