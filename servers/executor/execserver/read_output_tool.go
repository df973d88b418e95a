package execserver

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/outputs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxReadOutputPage is the most a sandbox_read_output call returns: a page a coding agent passes to its model whole
// (Claude Code refuses an MCP result over 25,000 tokens; 64 KiB of output is under that for text). The resource
// serves larger pages to a client that reads resources itself.
const maxReadOutputPage = 64 << 10

// addReadOutputTool registers sandbox_read_output: a kept output read through a tool, for the clients whose model
// has no resource tool (Qwen Code) or one only for listed resources (Gemini CLI). The default page is the output
// cap, the size the server already shows a model in a result.
func (e *Executor) addReadOutputTool() {
	mcpserve.AddTool(e.server, e.logger, &mcp.Tool{
		Name: protocol.ToolReadOutput,
		Description: fmt.Sprintf("Read the whole output of a command or process that a result cut short: uri is its stdout_resource or "+
			"stderr_resource. Returns one page from offset (default 0) of at most length bytes (default %d, at most %d), with next_offset to read "+
			"on from, size and complete (the stream has ended); text holds the bytes when they are UTF-8, else base64. The same bytes as "+
			"resources/read of the uri; readable by this session only, while its budget for full outputs keeps them.",
			min(e.cfg.OutputCap, maxReadOutputPage), maxReadOutputPage),
		Annotations: mcpserve.Annotations(mcpserve.Hints{Title: "Read a kept output", ReadOnly: true, Idempotent: true}),
	}, e.readOutputTool)
}

func (e *Executor) readOutputTool(ctx context.Context, req *mcp.CallToolRequest, in protocol.ReadOutputInput) (readOutputResult, error) {
	id, err := outputs.OutputID(in.URI)
	if err != nil {
		return readOutputResult{}, fmt.Errorf("uri %q: %w", in.URI, err)
	}
	length := in.Length
	switch {
	case length == 0:
		length = min(int64(e.cfg.OutputCap), maxReadOutputPage)
	case length < 0 || length > maxReadOutputPage:
		return readOutputResult{}, fmt.Errorf("length %d: give the most bytes to return, from 1 to %d (default %d)", length, maxReadOutputPage, min(e.cfg.OutputCap, maxReadOutputPage))
	}
	if in.Offset < 0 {
		return readOutputResult{}, fmt.Errorf("offset %d: give the byte to start from, a whole number from 0", in.Offset)
	}
	p, err := e.outputs.ReadPage(ownerOf(ctx, req.Session), id, in.Offset, length)
	if err != nil {
		return readOutputResult{}, fmt.Errorf("output %s: %w", in.URI, err)
	}
	out := protocol.ReadOutputOutput{URI: in.URI, Offset: p.Offset, Length: int64(len(p.Data)), NextOffset: p.NextOffset, Size: p.Size, Complete: p.Complete}
	if p.Text {
		out.Text = string(p.Data)
	} else {
		out.Base64 = base64.StdEncoding.EncodeToString(p.Data)
	}
	return readOutputResult{out}, nil
}

// readOutputResult is sandbox_read_output's result: the page's bytes go last in the text (mcpserve.LongFields), so
// a client that keeps only a head keeps where the page is and where to read on.
type readOutputResult struct{ protocol.ReadOutputOutput }

// LongFields implements mcpserve.LongFields.
func (readOutputResult) LongFields() []string { return []string{"text", "base64"} }
