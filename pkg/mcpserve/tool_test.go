package mcpserve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type divideIn struct {
	N     int    `json:"n"`
	Label string `json:"label,omitempty"`
}
type divideOut struct {
	Quotient int    `json:"quotient"`
	Label    string `json:"label"`
}

// divideServer has one tool, registered by AddTool, that panics on n = 0 and labels its answer; its input schema
// gives label a default.
func divideServer(t *testing.T) *mcp.Server {
	t.Helper()
	in, err := jsonschema.For[divideIn](nil)
	if err != nil {
		t.Fatal(err)
	}
	in.Properties["label"].Default = json.RawMessage(`"quotient"`)
	srv := mcp.NewServer(&mcp.Implementation{Name: "divide", Version: "test"}, nil)
	mcpserve.AddTool(srv, nil, &mcp.Tool{Name: "divide", InputSchema: in},
		func(_ context.Context, _ *mcp.CallToolRequest, in divideIn) (divideOut, error) {
			return divideOut{Quotient: 10 / in.N, Label: in.Label}, nil
		})
	return srv
}

func callText(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "divide", Arguments: args})
	if err != nil {
		t.Fatalf("divide %v: protocol error %v", args, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// TestAddToolPanicIsAToolError: a tool that panics costs its one call, which the client gets as a tool error; the
// server goes on serving the same session.
func TestAddToolPanicIsAToolError(t *testing.T) {
	cs := mcptest.Serve(t, divideServer(t), mcpserve.NoHealth)
	text, isError := callText(t, cs, map[string]any{"n": 0})
	if !isError || !strings.Contains(text, "divide failed with an internal error") {
		t.Fatalf("panicking call: error %v, text %q", isError, text)
	}
	text, isError = callText(t, cs, map[string]any{"n": 5, "label": "five"})
	if isError || text != `{"quotient":2,"label":"five"}` {
		t.Fatalf("the call after the panic: error %v, text %q", isError, text)
	}
}

// TestAddToolAppliesSchemaDefaults: a property the call leaves out gets the schema's default, as mcp.AddTool gives
// it; the arguments are still validated.
func TestAddToolAppliesSchemaDefaults(t *testing.T) {
	cs := mcptest.Serve(t, divideServer(t), mcpserve.NoHealth)
	if text, isError := callText(t, cs, map[string]any{"n": 2}); isError || text != `{"quotient":5,"label":"quotient"}` {
		t.Errorf("default label: error %v, text %q", isError, text)
	}
	if text, isError := callText(t, cs, map[string]any{"n": "two"}); !isError || !strings.Contains(text, `validating "arguments"`) {
		t.Errorf("a string for n: error %v, text %q", isError, text)
	}
	if text, isError := callText(t, cs, map[string]any{"n": 1, "extra": true}); !isError || !strings.Contains(text, "additional properties") {
		t.Errorf("an unknown argument: error %v, text %q", isError, text)
	}
}

// pictureOut is an output with content its JSON cannot carry: the picture's bytes.
type pictureOut struct {
	Name  string `json:"name"`
	bytes []byte
}

func (p pictureOut) MoreContent() []mcp.Content {
	return []mcp.Content{&mcp.ImageContent{Data: p.bytes, MIMEType: "image/png"}}
}

// TestAddToolMoreContent: an output's MoreContent items follow the JSON text in the result's content, and stay out
// of structuredContent.
func TestAddToolMoreContent(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "picture", Version: "test"}, nil)
	mcpserve.AddTool(srv, nil, &mcp.Tool{Name: "picture"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (pictureOut, error) {
		return pictureOut{Name: "dot", bytes: []byte("\x89PNG pixels")}, nil
	})
	cs := mcptest.Serve(t, srv, mcpserve.NoHealth)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "picture", Arguments: map[string]any{}})
	if err != nil || res.IsError || len(res.Content) != 2 {
		t.Fatalf("picture: %v, %+v", err, res)
	}
	text, isText := res.Content[0].(*mcp.TextContent)
	img, isImage := res.Content[1].(*mcp.ImageContent)
	if !isText || text.Text != `{"name":"dot"}` || !isImage || string(img.Data) != "\x89PNG pixels" || img.MIMEType != "image/png" {
		t.Errorf("content: %+v, %+v", res.Content[0], res.Content[1])
	}
	if raw, _ := json.Marshal(res.StructuredContent); string(raw) != `{"name":"dot"}` {
		t.Errorf("structuredContent %s", raw)
	}
}
