package mcpserve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type portableSample struct {
	Code    *int              `json:"code"`
	Names   []string          `json:"names,omitempty"`
	Nested  []portableNested  `json:"nested"`
	Labels  map[string]string `json:"labels,omitempty"`
	Plain   string            `json:"plain"`
	Pointer *portableNested   `json:"pointer,omitempty"`
}

type portableNested struct {
	Values []int `json:"values"`
}

// TestPortableSchemas: a schema the SDK infers with type arrays comes out with none (positive control: the inferred
// schema has them), and validates exactly the same values: null where the field may be null, a value of the type,
// and nothing else.
func TestPortableSchemas(t *testing.T) {
	s, err := jsonschema.For[portableSample](nil)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(s)
	if !strings.Contains(string(before), `"type":["null",`) {
		t.Fatalf("positive control: the inferred schema has no type array to rewrite: %s", before)
	}
	portable(s)
	after, _ := json.Marshal(s)
	if strings.Contains(string(after), `"type":[`) {
		t.Errorf("a type array is left: %s", after)
	}
	if strings.Contains(string(after), `"types"`) {
		t.Errorf("a types keyword is left: %s", after)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		doc string
		ok  bool
	}{
		{`{"code":null,"nested":null,"plain":"x"}`, true},
		{`{"code":3,"nested":[{"values":[1,2]}],"plain":"x","names":["a"],"labels":{"k":"v"},"pointer":{"values":null}}`, true},
		{`{"code":"3","nested":null,"plain":"x"}`, false},
		{`{"code":null,"nested":[{"values":["x"]}],"plain":"x"}`, false},
		{`{"code":null,"nested":null,"plain":null}`, false},
	} {
		var v any
		_ = json.Unmarshal([]byte(c.doc), &v)
		if err := r.Validate(v); (err == nil) != c.ok {
			t.Errorf("%s: valid %v, want %v (%v)", c.doc, err == nil, c.ok, err)
		}
	}
}
