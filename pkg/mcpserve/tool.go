package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hints are what a client may assume of a tool, as MCP's tool annotations say them; a hint left out is false.
type Hints struct {
	Title string
	// ReadOnly: the tool changes nothing.
	ReadOnly bool
	// Destructive: the tool may change or remove what was there (not only add).
	Destructive bool
	// Idempotent: calling it again with the same arguments changes nothing more.
	Idempotent bool
}

// Annotations are a tool's hints as the SDK takes them. goalbox tools never reach outside the workspace, so
// openWorldHint is false; destructiveHint, which MCP takes as true when absent, is always given.
func Annotations(h Hints) *mcp.ToolAnnotations {
	openWorld := false
	return &mcp.ToolAnnotations{
		Title:           h.Title,
		ReadOnlyHint:    h.ReadOnly,
		DestructiveHint: &h.Destructive,
		IdempotentHint:  h.Idempotent,
		OpenWorldHint:   &openWorld,
	}
}

// ToolHandler is a tool's logic on the protocol structs. A returned error becomes a tool error (isError: true)
// whose text is the error's message; a *jsonrpc.Error is passed on as a protocol error, as mcp.AddTool does.
type ToolHandler[In, Out any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (Out, error)

// AddTool registers a tool on srv, the one way both goalbox servers register theirs. Like mcp.AddTool it infers
// the input and output schemas from In and Out (t.InputSchema or t.OutputSchema, when set, is used instead), applies the
// input schema's defaults to the arguments, validates them with the same messages, returns an error as a tool error
// and a success as structuredContent plus the same JSON as text (then any MoreContent of the output). Unlike it:
//
//   - a panic in h costs that one call, which gets a tool error, not the server: the SDK does not recover panics,
//     and one would end the process and every session in it. The panic and its stack go to logger.
//   - the result is built once. mcp.AddTool marshals the output, unmarshals it into a map to validate it against
//     the schema inferred from the very type it came from, marshals it again, and hands it on as raw JSON that the
//     encoder then re-scans; on a 16 KiB file read that was about a quarter of the server's CPU per call. The
//     servers' tests check their output schemas on the results they see instead.
func AddTool[In, Out any](srv *mcp.Server, logger *slog.Logger, t *mcp.Tool, h ToolHandler[In, Out]) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	unstructured := t.OutputSchema == NoOutputSchema
	if unstructured {
		t.OutputSchema = nil
	}
	resolved, defaults := setSchemas[In, Out](t, unstructured)
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				logger.Error("tool panicked", "tool", t.Name, "panic", p, "stack", string(debug.Stack()))
				res, err = ToolError(fmt.Errorf("%s failed with an internal error (it is logged); the workspace is unchanged unless the tool had already written to it", t.Name)), nil
			}
		}()
		input, err := decodeArgs[In](req.Params.Arguments, resolved, defaults)
		if err != nil {
			return ToolError(err), nil
		}
		out, err := h(ctx, req, input)
		return toolResult(t.Name, out, err, unstructured)
	})
}

// setSchemas sets t's input and output schemas, and returns the input schema resolved for validation and whether
// it declares defaults. A schema that cannot be built is a programming error: it panics at registration.
func setSchemas[In, Out any](t *mcp.Tool, unstructured bool) (*jsonschema.Resolved, bool) {
	in, err := inputSchema[In](t)
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", t.Name, err))
	}
	portable(in)
	resolved, err := in.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", t.Name, err))
	}
	t.InputSchema = in
	if t.OutputSchema == nil && !unstructured {
		out, err := jsonschema.For[Out](nil)
		if err != nil {
			panic(fmt.Sprintf("tool %s: output schema: %v", t.Name, err))
		}
		t.OutputSchema = out
	}
	if out, ok := t.OutputSchema.(*jsonschema.Schema); ok {
		portable(out)
	}
	if t.Title == "" && t.Annotations != nil {
		t.Title = t.Annotations.Title // a top-level title on every tool, as clients that show tools expect
	}
	return resolved, hasDefaults(in)
}

// toolResult turns what tool's handler returned into the call's answer: a *jsonrpc.Error as a protocol error, any
// other error as a tool error, a success as structuredContent plus the same JSON as text (its long members last,
// each on a line of its own, when the output names them: LongFields).
func toolResult[Out any](tool string, out Out, err error, unstructured bool) (*mcp.CallToolResult, error) {
	if wire := (*jsonrpc.Error)(nil); errors.As(err, &wire) {
		return nil, wire
	}
	if err != nil {
		return ToolError(err), nil
	}
	text, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("marshaling the result of %s: %w", tool, err)
	}
	structured := text
	if long, ok := any(out).(LongFields); ok {
		if t, c, ok := factsFirst(text, long.LongFields()); ok {
			text, structured = t, c
		}
	}
	content := []mcp.Content{&mcp.TextContent{Text: string(text)}}
	if more, ok := any(out).(MoreContent); ok {
		content = append(content, more.MoreContent()...)
	}
	if unstructured && len(content) > 1 {
		return &mcp.CallToolResult{Content: content}, nil
	}
	return &mcp.CallToolResult{StructuredContent: jsonOutput{Value: out, json: structured}, Content: content}, nil
}

// jsonOutput is a tool's output as the structuredContent of its result: the Go value and its JSON, made once for
// the text content. It marshals to that JSON, so the output is not encoded a second time with the result (the
// SDK's encoder still checks and compacts it; the results encoded once copy it, encodetool.go).
type jsonOutput struct {
	Value any
	json  []byte
}

func (o jsonOutput) MarshalJSON() ([]byte, error) { return o.json, nil }

// NoOutputSchema as a tool's OutputSchema registers it without one, and its results with MoreContent (an image)
// without structuredContent. Codex gives its model a result's structuredContent in place of its content whenever
// there is one, so an image reaches a Codex model only in a result without it; and a client library that knows a
// tool's output schema (the TypeScript SDK) refuses a result without structuredContent, so such a tool declares
// none. Its other results still carry structuredContent (allowed without a schema), the same JSON as the text.
var NoOutputSchema = &jsonschema.Schema{Description: "no output schema: results with images carry no structuredContent"}

// MoreContent is implemented by a tool's output that carries content its JSON cannot: the image a file read
// returns, say. Its items follow the JSON text in the result's content (so the first item is always that text,
// for clients that show only text), and are not part of structuredContent.
type MoreContent interface {
	MoreContent() []mcp.Content
}

// inputSchema is the tool's own input schema when it gives one (where defaults are declared), else the one inferred
// from In.
func inputSchema[In any](t *mcp.Tool) (*jsonschema.Schema, error) {
	switch s := t.InputSchema.(type) {
	case nil:
		return jsonschema.For[In](nil)
	case *jsonschema.Schema:
		return s, nil
	default:
		return nil, fmt.Errorf("give a *jsonschema.Schema or none, not a %T", s)
	}
}

// decodeArgs applies the input schema's defaults to the raw arguments, validates them and decodes them, as
// mcp.AddTool does: absent arguments are an empty object, so that defaults and required properties apply to them.
// Arguments a client adds for itself (wait_for_previous) are dropped first, and undeclared others refused by name
// (args.go).
// Only a schema with defaults pays for encoding the arguments again after they were applied (a large file write
// would otherwise be decoded twice more).
func decodeArgs[In any](raw json.RawMessage, schema *jsonschema.Resolved, defaults bool) (In, error) {
	var in In
	var args any = map[string]any{}
	given := len(raw) > 0 && string(raw) != "null"
	if given {
		m := map[string]any{}
		if err := json.Unmarshal(raw, &m); err != nil {
			return in, fmt.Errorf("validating \"arguments\": arguments must be a JSON object: %v", err)
		}
		dropClientArgs(m, schema.Schema())
		if refusal := unknownArgs(m, schema.Schema()); refusal != "" {
			return in, errors.New(refusal)
		}
		args = m
	}
	if defaults {
		if err := schema.ApplyDefaults(&args); err != nil {
			return in, fmt.Errorf("validating \"arguments\": applying schema defaults: %v", err)
		}
	}
	if err := schema.Validate(&args); err != nil {
		return in, fmt.Errorf("validating \"arguments\": %v", err)
	}
	if defaults {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			return in, fmt.Errorf("validating \"arguments\": %v", err)
		}
		given = true
	}
	if given {
		if err := json.Unmarshal(raw, &in); err != nil {
			return in, fmt.Errorf("validating \"arguments\": %v", err)
		}
	}
	return in, nil
}

// hasDefaults says whether s or any of its properties, at any depth, has a default: the places ApplyDefaults
// looks.
func hasDefaults(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	if s.Default != nil {
		return true
	}
	for _, p := range s.Properties {
		if hasDefaults(p) {
			return true
		}
	}
	return false
}

// ToolError is a tool result that reports err to the client (isError: true).
func ToolError(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}
