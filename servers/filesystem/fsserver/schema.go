package fsserver

import (
	"fmt"

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

func entryTypeEnum(item *jsonschema.Schema) {
	item.Properties["type"].Enum = []any{protocol.EntryFile, protocol.EntryDir, protocol.EntrySymlink, protocol.EntryOther}
}

// outputSchema infers T's schema and declares its field list an array that is never null, letting fix refine the
// schema of the array's items.
func outputSchema[T any](list string, fix func(item *jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("output schema of %T: %v", *new(T), err))
	}
	arr := s.Properties[list]
	arr.Types, arr.Type = nil, "array"
	if fix != nil {
		fix(arr.Items)
	}
	return s
}
