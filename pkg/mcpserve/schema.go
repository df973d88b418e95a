package mcpserve

// Portable schemas. The schemas the go-sdk infers from Go types write a nullable field (a pointer, a slice, a map)
// as a type array, {"type": ["null", "integer"]}. Gemini's function declarations and OpenAI's strict mode refuse
// type arrays, and clients that do not rewrite schemas then fail to offer the tool to the model at all. Every tool
// schema is made portable once, at registration: a type array becomes an anyOf of the same schema with one type
// and {"type": "null"}, which both rule sets accept and which validates exactly the same values.

import (
	"maps"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// portable rewrites s in place, and every schema inside it, without type arrays.
func portable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for _, sub := range subschemas(s) {
		portable(sub)
	}
	switch {
	case len(s.Types) == 1:
		s.Type, s.Types = s.Types[0], nil
	case len(s.Types) > 1:
		var branches []*jsonschema.Schema
		for _, t := range s.Types {
			if t == "null" {
				continue
			}
			b := *s
			b.Types, b.Type, b.Title, b.Description, b.Default = nil, t, "", "", nil
			branches = append(branches, &b)
		}
		if slices.Contains(s.Types, "null") {
			branches = append(branches, &jsonschema.Schema{Type: "null"})
		}
		*s = jsonschema.Schema{Title: s.Title, Description: s.Description, Default: s.Default, AnyOf: branches}
	}
}

// subschemas are the schemas directly inside s.
func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		out = append(out, s.Properties[k])
	}
	out = append(out, s.Items, s.AdditionalProperties, s.Not)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	out = append(out, s.AllOf...)
	out = append(out, s.PrefixItems...)
	for _, k := range slices.Sorted(maps.Keys(s.Defs)) {
		out = append(out, s.Defs[k])
	}
	return slices.DeleteFunc(out, func(x *jsonschema.Schema) bool { return x == nil })
}
