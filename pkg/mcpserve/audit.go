package mcpserve

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AuditRecord is one line of the audit log: a tool call and how it ended.
type AuditRecord struct {
	Time   time.Time `json:"time"`
	Server string    `json:"server"`
	// Session is the MCP session's ID; empty on stdio and for stateless requests (MCP 2026-07-28 over HTTP),
	// which have none.
	Session string `json:"session,omitempty"`
	// Protocol is the MCP version the call was made in: the session's, or the request's own under 2026-07-28.
	Protocol   string          `json:"protocol,omitempty"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	Outcome    string          `json:"outcome"` // ok, tool_error or protocol_error
	Error      string          `json:"error,omitempty"`
	DurationMs int64           `json:"duration_ms"`
}

// maxAuditArgBytes keeps a huge write from bloating the audit log; the record says the arguments were cut.
const maxAuditArgBytes = 4 << 10

// Audit adds a middleware to srv that writes one JSON line to w for every tools/call, after it ends.
func Audit(srv *mcp.Server, name string, w io.Writer) {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok {
				return next(ctx, method, req)
			}
			start := time.Now()
			res, err := next(ctx, method, req)
			rec := AuditRecord{Time: start.UTC(), Server: name, Tool: call.Params.Name, DurationMs: time.Since(start).Milliseconds(), Outcome: "ok"}
			if call.Session != nil {
				rec.Session = call.Session.ID()
				if p := call.Session.InitializeParams(); p != nil {
					rec.Protocol = p.ProtocolVersion
				}
			}
			rec.Arguments = clipArgs(call.Params.Arguments)
			switch r, _ := res.(*mcp.CallToolResult); {
			case err != nil:
				rec.Outcome, rec.Error = "protocol_error", err.Error()
			case r != nil && r.IsError:
				rec.Outcome, rec.Error = "tool_error", ToolErrorText(r)
			}
			mu.Lock()
			_ = enc.Encode(rec)
			mu.Unlock()
			return res, err
		}
	})
}

func clipArgs(raw json.RawMessage) json.RawMessage {
	if len(raw) <= maxAuditArgBytes {
		return raw
	}
	clipped, _ := json.Marshal(map[string]any{"clipped": true, "bytes": len(raw), "head": string(raw[:maxAuditArgBytes])})
	return clipped
}

// ToolErrorText is the message of a tool error result.
func ToolErrorText(r *mcp.CallToolResult) string {
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}
