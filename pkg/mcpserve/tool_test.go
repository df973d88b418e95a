package mcpserve_test

import (
	"context"
	"encoding/json"
	"slices"
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
	if text, isError := callText(t, cs, map[string]any{"n": 1, "extra": true}); !isError || !strings.Contains(text, `unknown argument "extra": this tool takes only label, n`) {
		t.Errorf("an unknown argument: error %v, text %q", isError, text)
	}
}

// TestAddToolClientArguments: Gemini CLI adds wait_for_previous to every tool's schema and sends it; the call goes
// through as if it were not there (before, every call failed with "unexpected additional properties"). Other
// unknown arguments are still refused, by name, beside it.
func TestAddToolClientArguments(t *testing.T) {
	cs := mcptest.Serve(t, divideServer(t), mcpserve.NoHealth)
	for _, wait := range []any{true, false} {
		if text, isError := callText(t, cs, map[string]any{"n": 5, "wait_for_previous": wait}); isError || text != `{"quotient":2,"label":"quotient"}` {
			t.Errorf("wait_for_previous %v: error %v, text %q", wait, isError, text)
		}
	}
	if text, isError := callText(t, cs, map[string]any{"n": 5, "wait_for_previous": true, "extra": 1, "more": 2}); !isError ||
		!strings.Contains(text, `unknown arguments "extra", "more": this tool takes only label, n`) {
		t.Errorf("unknown arguments beside wait_for_previous: error %v, text %q", isError, text)
	}
}

// pictureOut is an output with content its JSON cannot carry: the picture's bytes.
type pictureOut struct {
	Name  string `json:"name"`
	bytes []byte
}

func (p pictureOut) MoreContent() []mcp.Content {
	if p.bytes == nil {
		return nil
	}
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

// runOut is an output shaped like the executor's run result: the streams declared first, as a struct may well
// declare them, and named as its long fields.
type runOut struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	Truncated bool   `json:"stdout_truncated"`
	Resource  string `json:"stdout_resource,omitempty"`
	Later     string `json:"a_field_added_later,omitempty"`
}

func (runOut) LongFields() []string { return []string{"stdout", "stderr"} }

// TestAddToolFactsFirst: an output's long fields come last in the result's text, each on a line of its own, after a
// first line with every other field (one added later too), so that what each coding agent keeps of a long result
// holds the facts: a 2 KB head (Claude Code's preview), only the lines under 50 KB (opencode), a 4.5 KB head (Qwen
// Code). The text is still the output's JSON; structuredContent has the same order on one line. Without
// LongFields (the positive control) the facts come after 300 KB of stdout and no cut keeps them.
func TestAddToolFactsFirst(t *testing.T) {
	huge := strings.Repeat("x", 300<<10)
	want := runOut{Stdout: huge, Stderr: "warning\n", ExitCode: 3, Truncated: true, Resource: "goalbox-output://id/stdout", Later: "yes"}
	srv := mcp.NewServer(&mcp.Implementation{Name: "run", Version: "test"}, nil)
	mcpserve.AddTool(srv, nil, &mcp.Tool{Name: "run"}, func(context.Context, *mcp.CallToolRequest, struct{}) (runOut, error) {
		return want, nil
	})
	mcpserve.AddTool(srv, nil, &mcp.Tool{Name: "plain"}, func(context.Context, *mcp.CallToolRequest, struct{}) (struct {
		Stdout   string `json:"stdout"`
		ExitCode int    `json:"exit_code"`
	}, error) {
		return struct {
			Stdout   string `json:"stdout"`
			ExitCode int    `json:"exit_code"`
		}{huge, 3}, nil
	})
	cs := mcptest.Serve(t, srv, mcpserve.NoHealth)
	call := func(name string) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		return res
	}
	res := call("run")
	text := res.Content[0].(*mcp.TextContent).Text
	first, _, _ := strings.Cut(text, "\n")
	if wantFirst := `{"exit_code":3,"stdout_truncated":true,"stdout_resource":"goalbox-output://id/stdout","a_field_added_later":"yes",`; first != wantFirst {
		t.Errorf("first line %q, want %q", first, wantFirst)
	}
	var got runOut
	if err := json.Unmarshal([]byte(text), &got); err != nil || got != want {
		t.Errorf("the text is not the output's JSON: %v", err)
	}
	raw, _ := json.Marshal(res.StructuredContent) // its order on the wire: TestFactsFirstCompact
	if err := json.Unmarshal(raw, &got); err != nil || got != want {
		t.Errorf("structuredContent is not the output: %v", err)
	}

	// What each client's cut leaves of it, and of the result without LongFields.
	cuts := map[string]func(string) string{
		"a 2 KB head": func(s string) string { return s[:min(len(s), 2<<10)] },
		"the lines under 50 KB": func(s string) string {
			return strings.Join(slices.DeleteFunc(strings.Split(s, "\n"), func(l string) bool { return len(l) >= 50<<10 }), "\n")
		},
		"a 4.5 KB head and 1 KB tail": func(s string) string { return s[:4608] + s[len(s)-1024:] },
	}
	plain := call("plain").Content[0].(*mcp.TextContent).Text
	for name, cut := range cuts {
		if kept := cut(text); !strings.Contains(kept, `"exit_code":3`) || !strings.Contains(kept, `"stdout_truncated":true`) || !strings.Contains(kept, "goalbox-output://id/stdout") {
			t.Errorf("%s of the result loses its facts: %.300q", name, kept)
		}
		if kept := cut(plain); name != "a 4.5 KB head and 1 KB tail" && strings.Contains(kept, `"exit_code":3`) {
			t.Errorf("positive control: %s of the stdout-first result still has the exit code", name)
		}
	}
}

// TestAddToolNoOutputSchema: a tool registered with NoOutputSchema lists none, and its results with more content
// (an image) carry no structuredContent, so that Codex, which shows its model a result's structuredContent in place
// of its content, shows the image; its other results keep structuredContent. The positive control is the same tool
// with its output schema: the image result has structuredContent, which Codex would show instead of the image.
func TestAddToolNoOutputSchema(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "picture", Version: "test"}, nil)
	for _, name := range []string{"plain", "picture"} {
		tool := &mcp.Tool{Name: name}
		if name == "picture" {
			tool.OutputSchema = mcpserve.NoOutputSchema
		}
		mcpserve.AddTool(srv, nil, tool, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Image bool `json:"image"`
		}) (pictureOut, error) {
			if in.Image {
				return pictureOut{Name: "dot", bytes: []byte("\x89PNG pixels")}, nil
			}
			return pictureOut{Name: "text"}, nil
		})
	}
	cs := mcptest.Serve(t, srv, mcpserve.NoHealth)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if (tl.OutputSchema == nil) != (tl.Name == "picture") {
			t.Errorf("%s: output schema %v", tl.Name, tl.OutputSchema)
		}
	}
	call := func(name string, image bool) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"image": image}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		return res
	}
	if res := call("picture", true); res.StructuredContent != nil || len(res.Content) != 2 {
		t.Errorf("an image result: structuredContent %v, %d items", res.StructuredContent, len(res.Content))
	}
	if res := call("picture", false); res.StructuredContent == nil {
		t.Error("a result without an image lost its structuredContent")
	}
	if res := call("plain", true); res.StructuredContent == nil {
		t.Error("positive control: the tool with an output schema gave no structuredContent")
	}
}
