package mcptest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// The rule sets two model providers apply to a tool's JSON Schema, as their documentation states them. A schema is
// checked as the tool lists it: a client that forwards it unchanged meets these rules or an error from the provider.

// RuleSet is one provider's rules for a function's parameter schema.
type RuleSet struct {
	Name string
	// keywords are the schema keywords the provider accepts; any other is refused.
	keywords []string
	// types are the values "type" may take.
	types []string
	// strictObjects: every object must say additionalProperties false and list every property as required
	// (OpenAI's strict mode, where optional means required and nullable).
	strictObjects bool
	// enumValues: the kinds an enum's values may be ("string", "number").
	enumValues []string
}

// OpenAIStrict is OpenAI's strict mode for function parameters (Structured Outputs' supported subset of JSON
// Schema): a root object, additionalProperties false and every property required on every object, and only these
// keywords.
var OpenAIStrict = RuleSet{
	Name: "OpenAI strict mode",
	keywords: []string{"type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
		"$ref", "$defs", "description", "title", "pattern", "format", "multipleOf", "minimum", "maximum",
		"exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems"},
	types:         []string{"object", "array", "string", "number", "integer", "boolean", "null"},
	strictObjects: true,
	enumValues:    []string{"string", "number", "boolean", "null"},
}

// GeminiJSONSchema is Gemini's function declarations given as parametersJsonSchema, the JSON Schema path (the
// one Google's own SDKs use for MCP tools): its documented keywords, enums of strings and numbers, no $schema.
// The older parameters field takes an OpenAPI 3.0 subset without additionalProperties, which clients of it strip.
var GeminiJSONSchema = RuleSet{
	Name: "Gemini parametersJsonSchema",
	keywords: []string{"$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum", "items",
		"prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf", "properties",
		"additionalProperties", "required", "propertyOrdering"},
	types:      []string{"object", "array", "string", "number", "integer", "boolean", "null"},
	enumValues: []string{"string", "number"},
}

// Violation is one place a schema breaks a rule.
type Violation struct {
	Path string // JSON pointer-like path from the root
	Rule string // "keyword", "type", "root", "additional-properties", "optional", "enum"
	Text string
}

func (v Violation) String() string { return v.Path + ": " + v.Text }

// Check returns every violation of schema (as JSON-decoded: map[string]any) against r.
func (r RuleSet) Check(schema map[string]any) []Violation {
	var out []Violation
	add := func(path, rule, format string, a ...any) {
		out = append(out, Violation{Path: path, Rule: rule, Text: fmt.Sprintf(format, a...)})
	}
	if schema["type"] != "object" {
		add("#", "root", "the root is not an object schema (type %v)", schema["type"])
	}
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(s)) {
			if !slices.Contains(r.keywords, k) {
				add(path, "keyword", "keyword %q is not accepted", k)
			}
		}
		switch t := s["type"].(type) {
		case nil:
		case string:
			if !slices.Contains(r.types, t) {
				add(path, "type", "type %q is not accepted", t)
			}
		default:
			add(path, "type", "type is %v, not one type name", t)
		}
		if values, ok := s["enum"].([]any); ok {
			for _, v := range values {
				kind := "null"
				switch v.(type) {
				case string:
					kind = "string"
				case float64:
					kind = "number"
				case bool:
					kind = "boolean"
				}
				if !slices.Contains(r.enumValues, kind) {
					add(path, "enum", "an enum value of kind %s", kind)
				}
			}
		}
		props, _ := s["properties"].(map[string]any)
		if r.strictObjects && s["type"] == "object" {
			if s["additionalProperties"] != false {
				add(path, "additional-properties", "an object without additionalProperties false")
			}
			required, _ := s["required"].([]any)
			for _, name := range slices.Sorted(maps.Keys(props)) {
				if !slices.Contains(required, any(name)) {
					add(path+"/properties/"+name, "optional", "property %q is optional (strict mode wants it required, and nullable if it may be left out)", name)
				}
			}
		}
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok {
				walk(path+"/properties/"+name, ps)
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(path+"/items", items)
		}
		for _, k := range []string{"anyOf", "oneOf", "prefixItems"} {
			list, _ := s[k].([]any)
			for i, v := range list {
				if vs, ok := v.(map[string]any); ok {
					walk(fmt.Sprintf("%s/%s/%d", path, k, i), vs)
				}
			}
		}
		if defs, ok := s["$defs"].(map[string]any); ok {
			for name, d := range defs {
				if ds, ok := d.(map[string]any); ok {
					walk(path+"/$defs/"+name, ds)
				}
			}
		}
	}
	walk("#", schema)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
