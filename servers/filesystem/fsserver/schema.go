package fsserver

import (
	"fmt"
	"maps"
	"slices"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/google/jsonschema-go/jsonschema"
)

// The output schemas of list and search are inferred from the protocol structs and then made exact where Go types
// cannot say it: the lists are never null, and an entry's type is one of four words. Clients that validate
// structuredContent, and models that read the schema, then know precisely what comes back.
var (
	listOutputSchema   = outputSchema[protocol.ListFilesOutput]("entries", entryTypeEnum)
	searchOutputSchema = outputSchema[protocol.SearchFilesOutput]("matches", nil)
)

// readOutputSchema is the three shapes a read returns: a text read's lines, an image's description, a base64 read's
// bytes. The properties are all the fields any of them has, so a client that lists properties sees every field,
// and the description says which go together. (A top-level oneOf said so exactly, but Gemini's function
// declarations and OpenAI's strict mode refuse a top-level oneOf: portable schemas win.) No result can be taken for
// another shape: only a text read has start_line, only an image has mime_type, only a base64 read has encoding.
var readOutputSchema = func() *jsonschema.Schema {
	s := schemaFor[readOutput]()
	text := slices.Clone(s.Required)
	image, b64 := schemaFor[protocol.ReadFileImageOutput](), schemaFor[protocol.ReadFileBase64Output]()
	for _, shape := range []*jsonschema.Schema{image, b64} {
		maps.Copy(s.Properties, shape.Properties)
	}
	s.Properties["content"].Description = "a text read: the lines' exact text; a base64 read: the whole file, base64-encoded"
	s.Properties["size"].Description = "the file's size in bytes (images and base64 reads)"
	s.Required = []string{"path"}
	s.Description = fmt.Sprintf("one of three shapes: a text read has %v; an image has %v; a base64 read has %v",
		text, image.Required, b64.Required)
	return s
}()

// encodingInputSchema is In's inferred input schema with its encoding field limited to the two encodings.
func encodingInputSchema[In any]() *jsonschema.Schema {
	s := schemaFor[In]()
	s.Properties["encoding"].Enum = []any{protocol.EncodingText, protocol.EncodingBase64}
	return s
}

func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err))
	}
	return s
}

func entryTypeEnum(item *jsonschema.Schema) {
	item.Properties["type"].Enum = []any{protocol.EntryFile, protocol.EntryDir, protocol.EntrySymlink, protocol.EntryOther}
}

// outputSchema infers T's schema and declares its field list an array that is never null, letting fix refine the
// schema of the array's items.
func outputSchema[T any](list string, fix func(item *jsonschema.Schema)) *jsonschema.Schema {
	s := arraysNotNull(schemaFor[T](), list)
	if fix != nil {
		fix(s.Properties[list].Items)
	}
	return s
}

// arraysNotNull declares the named list fields of s plain arrays: Go's nil slice makes the inferred schema allow
// null too (a type array, which not every client takes), but these lists are never null.
func arraysNotNull(s *jsonschema.Schema, names ...string) *jsonschema.Schema {
	for _, n := range names {
		p := s.Properties[n]
		p.Types, p.Type = nil, "array"
	}
	return s
}
