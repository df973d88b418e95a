package mcpserve

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Arguments a client adds to every tool's call on its own account, for itself, not for the tool: they are removed
// before the arguments are validated, so the call goes through as if they were not there. Any other argument the
// tool does not declare is still refused (unknownArgs): a misspelled or invented argument ("timeout" for
// "timeout_seconds", "cwd" on a tool without one) that was silently ignored would change what the call does without
// the model knowing, where a refusal that names the tool's arguments costs one retry. docs/clients.md says why.
var clientArgs = map[string]string{
	// Gemini CLI adds a boolean wait_for_previous to every MCP tool's schema, tells its model to set it on a call
	// that depends on an earlier one, and passes it on to the server.
	"wait_for_previous": "Gemini CLI",
}

// dropClientArgs removes from args the client arguments the schema does not declare itself.
func dropClientArgs(args map[string]any, schema *jsonschema.Schema) {
	for name := range clientArgs {
		if _, declared := schema.Properties[name]; !declared {
			delete(args, name)
		}
	}
}

// unknownArgs is the refusal of arguments the schema does not declare, when it allows no others: it names them and
// the ones the tool takes. "" when there are none.
func unknownArgs(args map[string]any, schema *jsonschema.Schema) string {
	if schema.AdditionalProperties == nil || schema.AdditionalProperties.Not == nil {
		return "" // the schema allows more properties (or the validator will say what it does not)
	}
	var unknown []string
	for name := range args {
		if _, declared := schema.Properties[name]; !declared {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	slices.Sort(unknown)
	what := "unknown argument " + unknown[0]
	if len(unknown) > 1 {
		what = "unknown arguments " + strings.Join(unknown, ", ")
	}
	takes := "no arguments"
	if len(schema.Properties) > 0 {
		takes = "only " + strings.Join(slices.Sorted(maps.Keys(schema.Properties)), ", ")
	}
	return fmt.Sprintf("validating \"arguments\": %s: this tool takes %s (unknown arguments are refused rather than ignored, so that a misspelled one does not go unnoticed)", what, takes)
}
