package mcpserve

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Annotations are a tool's hints. goalbox tools never reach outside the workspace, so openWorldHint is false.
func Annotations(title string, readOnly, destructive, idempotent bool) *mcp.ToolAnnotations {
	f := false
	return &mcp.ToolAnnotations{
		Title:           title,
		ReadOnlyHint:    readOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  idempotent,
		OpenWorldHint:   &f,
	}
}
