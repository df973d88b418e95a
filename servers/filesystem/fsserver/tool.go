package fsserver

import (
	"context"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handler is a file tool's logic on the protocol structs: the file tools need nothing of the request but its
// arguments.
type handler[In, Out any] func(context.Context, In) (Out, error)

// withHint adapts a file tool to mcpserve.AddTool, adding to a refusal what the model can do about it (hint).
func withHint[In, Out any](h handler[In, Out]) mcpserve.ToolHandler[In, Out] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in In) (Out, error) {
		out, err := h(ctx, in)
		if err != nil {
			return out, hint(err)
		}
		return out, nil
	}
}
