package fsserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handler is a tool's logic on the protocol structs. A returned error becomes a tool error (isError: true) whose
// text is the error's message.
type handler[In, Out any] func(context.Context, In) (Out, error)

// addTool registers a tool on the protocol structs the way mcp.AddTool does — input and output schemas inferred
// from In and Out (t.OutputSchema, when set, refines the inferred one), arguments validated against the input
// schema with the same messages, an error returned as a tool error, and a success returned as structuredContent
// plus the same JSON as text — but builds the result once. mcp.AddTool marshals the output, unmarshals it into a map
// to validate it against the schema inferred from the very type it came from, marshals it again, and hands it on
// as raw JSON that the encoder then re-scans; on a 16 KiB read that was about a quarter of the server's CPU per
// call. The output schemas are checked instead by the tests, on every result they see.
func addTool[In, Out any](srv *mcp.Server, logger *slog.Logger, t *mcp.Tool, h handler[In, Out]) {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", t.Name, err))
	}
	resolved, err := in.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", t.Name, err))
	}
	t.InputSchema = in
	if t.OutputSchema == nil {
		out, err := jsonschema.For[Out](nil)
		if err != nil {
			panic(fmt.Sprintf("tool %s: output schema: %v", t.Name, err))
		}
		t.OutputSchema = out
	}
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		// The SDK does not recover panics, and one would end the whole server: a bug in a tool must cost one call.
		defer func() {
			if p := recover(); p != nil {
				logger.Error("tool panicked", "tool", t.Name, "panic", p, "stack", string(debug.Stack()))
				res, err = toolError(fmt.Errorf("%s failed with an internal error (it is logged); the workspace is unchanged unless the tool had already written", t.Name)), nil
			}
		}()
		input, err := decodeArgs[In](req.Params.Arguments, resolved)
		if err != nil {
			return toolError(err), nil
		}
		out, err := h(ctx, input)
		if err != nil {
			return toolError(hint(err)), nil
		}
		text, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("marshaling the result of %s: %w", t.Name, err)
		}
		// structuredContent is the Go value itself: encoded with the response, it comes out as the same JSON as text.
		return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, nil
	})
}

// decodeArgs validates raw arguments against the input schema and decodes them.
func decodeArgs[In any](raw json.RawMessage, schema *jsonschema.Resolved) (In, error) {
	var in In
	m := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m); err != nil {
			return in, fmt.Errorf("validating \"arguments\": arguments must be a JSON object: %v", err)
		}
	}
	if err := schema.Validate(m); err != nil {
		return in, fmt.Errorf("validating \"arguments\": %v", err)
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &in); err != nil {
			return in, fmt.Errorf("validating \"arguments\": %v", err)
		}
	}
	return in, nil
}

func toolError(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}
