package mcptest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RequirePortableTools fails t for every tool a client library or model provider would refuse or show badly: one
// without a top-level title, or whose input or output schema has a type array anywhere ({"type": ["null",
// "integer"]}) or a combinator at its top (oneOf, anyOf, allOf, not). Gemini's function declarations and OpenAI's
// strict mode refuse both; the input schema must be an object. Each schema is also held to both providers' rule
// sets as it is listed (rulesets.go): Gemini's JSON Schema path entirely, and OpenAI's strict mode in everything
// but optional properties, which strict mode can only express as required and nullable, what a client of the tool
// that leaves them out would then be refused for. A schema with none is strict as it is; the others are sent
// non-strict, or made strict by the client library (the OpenAI Agents SDK does; docs/clients.md).
func RequirePortableTools(t testing.TB, tools []*mcp.Tool) {
	t.Helper()
	strict := 0
	for _, tool := range tools {
		if tool.Title == "" {
			t.Errorf("tool %s has no top-level title", tool.Name)
		}
		inputStrict := true
		for which, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			if schema == nil {
				continue
			}
			raw, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]any
			_ = json.Unmarshal(raw, &top)
			for _, k := range []string{"oneOf", "anyOf", "allOf", "not"} {
				if _, ok := top[k]; ok {
					t.Errorf("tool %s: its %s schema has a top-level %s", tool.Name, which, k)
				}
			}
			if top["type"] != "object" {
				t.Errorf("tool %s: its %s schema is of type %v, not object", tool.Name, which, top["type"])
			}
			if strings.Contains(string(raw), `"type":[`) {
				t.Errorf("tool %s: its %s schema has a type array: %s", tool.Name, which, raw)
			}
			for _, v := range GeminiJSONSchema.Check(top) {
				t.Errorf("tool %s: its %s schema breaks %s: %s", tool.Name, which, GeminiJSONSchema.Name, v)
			}
			for _, v := range OpenAIStrict.Check(top) {
				if v.Rule != "optional" {
					t.Errorf("tool %s: its %s schema breaks %s: %s", tool.Name, which, OpenAIStrict.Name, v)
				} else if which == "input" {
					inputStrict = false
				}
			}
		}
		if inputStrict {
			strict++
		}
	}
	t.Logf("%d of %d tools are OpenAI-strict as listed; every one meets Gemini's parametersJsonSchema", strict, len(tools))
}
