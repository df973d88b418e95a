package mcptest

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestRuleSets: each rule of both providers' sets refuses a schema that breaks it, and lets through one that keeps it
// (the positive control of the checks RequirePortableTools makes of every tool).
func TestRuleSets(t *testing.T) {
	good := `{"type":"object","additionalProperties":false,"required":["path","mode"],"properties":{
		"path":{"type":"string","description":"a path"},
		"mode":{"type":"string","enum":["a","b"]},
		"list":{"anyOf":[{"type":"array","items":{"type":"integer"}},{"type":"null"}]}}}`
	for _, tc := range []struct {
		name, schema string
		rules        RuleSet
		want         []string // rules broken, in path order
	}{
		{"openai: an optional property", good, OpenAIStrict, []string{"optional"}},
		{"gemini: the same schema", good, GeminiJSONSchema, nil},
		{"openai: all required", `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string"}}}`, OpenAIStrict, nil},
		{"openai: no additionalProperties false", `{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`, OpenAIStrict, []string{"additional-properties"}},
		{"openai: a nested object keeps extra keys", `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"object","properties":{}}}}`, OpenAIStrict, []string{"additional-properties"}},
		{"both: a type array", `{"type":"object","properties":{"a":{"type":["string","null"]}}}`, GeminiJSONSchema, []string{"type"}},
		{"both: a root that is not an object", `{"type":"string"}`, GeminiJSONSchema, []string{"root"}},
		{"openai: a root anyOf", `{"anyOf":[{"type":"object","additionalProperties":false}]}`, OpenAIStrict, []string{"root"}},
		{"gemini: $schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, GeminiJSONSchema, []string{"keyword"}},
		{"openai: minLength", `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string","minLength":1}}}`, OpenAIStrict, []string{"keyword"}},
		{"gemini: a boolean enum", `{"type":"object","properties":{"a":{"enum":[true,false]}}}`, GeminiJSONSchema, []string{"enum", "enum"}},
		{"gemini: an unknown type", `{"type":"object","properties":{"a":{"type":"date"}}}`, GeminiJSONSchema, []string{"type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s map[string]any
			if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range tc.rules.Check(s) {
				got = append(got, v.Rule)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: broken rules %v, want %v (%v)", tc.rules.Name, got, tc.want, tc.rules.Check(s))
			}
		})
	}
}
