package mcpserve

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodeToolResult encodes a tool result as the go-sdk would, in one pass over each large value: text contents
// with their text escaped once, structuredContent encoded from its Go value (or copied, when it is already
// json.RawMessage). The members the SDK may add around them (_meta, resultType and the rest) come from the SDK's
// own MarshalJSON of the result without its content, which is short. ok is false for a content item other than
// plain text, which the caller leaves to the SDK.
// The JSON is in a buffer of encodeBufs, which the caller owns.
func encodeToolResult(r *mcp.CallToolResult) (_ *bytes.Buffer, ok bool) {
	for _, c := range r.Content {
		if t, isText := c.(*mcp.TextContent); !isText || t.Meta != nil || t.Annotations != nil {
			return nil, false
		}
	}
	// The rest of the result, as the SDK encodes it: a copy without the two large members.
	rest := *r
	rest.Content, rest.StructuredContent = nil, nil
	envelope, err := rest.MarshalJSON()
	if err != nil {
		return nil, false
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(envelope, &members); err != nil {
		return nil, false
	}
	delete(members, "content")
	delete(members, "structuredContent")

	buf := encodeBufs.Get().(*bytes.Buffer)
	buf.Reset()
	fail := func() (*bytes.Buffer, bool) {
		encodeBufs.Put(buf)
		return nil, false
	}
	// HTML characters are escaped, as the SDK's MarshalJSON of a result escapes them: the bytes are the same as before.
	enc := json.NewEncoder(buf)
	buf.WriteString(`{"content":[`)
	for i, c := range r.Content {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"type":"text","text":`)
		if enc.Encode(c.(*mcp.TextContent).Text) != nil {
			return fail()
		}
		trimNewline(buf)
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	if r.StructuredContent != nil {
		buf.WriteString(`,"structuredContent":`)
		if raw, isRaw := r.StructuredContent.(json.RawMessage); isRaw {
			if !json.Valid(raw) {
				return fail()
			}
			buf.Write(raw)
		} else {
			if enc.Encode(r.StructuredContent) != nil {
				return fail()
			}
			trimNewline(buf)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(members)) {
		buf.WriteByte(',')
		key, _ := json.Marshal(k)
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(members[k])
	}
	buf.WriteByte('}')
	return buf, true
}

// encodeBufs are the buffers results are encoded and messages spliced in: a 16 KiB read then allocates none.
var encodeBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// trimNewline removes the newline json.Encoder writes after each value.
func trimNewline(buf *bytes.Buffer) { buf.Truncate(buf.Len() - 1) }
