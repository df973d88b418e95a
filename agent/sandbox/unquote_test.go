package sandbox

import (
	"encoding/json"
	"strings"
	"testing"

	segjson "github.com/segmentio/encoding/json"
)

var unquoteCases = []string{
	`""`, `"plain"`, `"tab\there \"quoted\" back\\slash \/ \b\f\n\r"`, `"\u00e9\u4e16\u0000\u001f"`,
	`"\ud83d\ude00 pair"`, `"\ud83d lone high"`, `"\ude00 lone low"`, `"\ud83d\u0041 high then not low"`,
	`"\ud83d\ud83d two highs"`, "\"raw \xff\xfe invalid\"", "\"raw \xe2\x82 cut\"", "\"é 世 😀 raw\"",
	"\"\xed\xa0\x80 encoded surrogate\"", `"\u2028\u2029"`, `"\UABCD"`, `"\u12"`, `"\u12G4"`, `"\x"`, `"\"`,
	`"a"b"`, "\"ctrl \x01\"", `"no end`, `no start"`, `"`, ``, `"\`,
}

// unquoteJSON decodes every string as encoding/json does, and refuses what it refuses.
func TestUnquoteJSONIsEncodingJSONs(t *testing.T) {
	for _, raw := range unquoteCases {
		checkUnquote(t, raw)
	}
}

func checkUnquote(t *testing.T, raw string) {
	t.Helper()
	var want string
	err := json.Unmarshal([]byte(raw), &want)
	got, ok := unquoteJSON([]byte(raw))
	if ok != (err == nil) || got != want {
		t.Fatalf("unquoteJSON(%q) = %q, %v; encoding/json: %q, %v", raw, got, ok, want, err)
	}
}

func FuzzUnquoteJSON(f *testing.F) {
	for _, raw := range unquoteCases {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if strings.HasPrefix(raw, `"`) && strings.HasSuffix(raw, `"`) {
			checkUnquote(t, raw)
		}
	})
}

// The text of a 16 KiB read as the agent gets it: source code, as JSON, as a JSON string.
func benchText(b *testing.B) []byte {
	line := "\tfmt.Fprintf(w, \"%6d\\t%s\\n\", i+1, line) // a line of code with \"quotes\"\n"
	inner, _ := json.Marshal(map[string]string{"content": strings.Repeat(line, 16<<10/len(line)+1)[:16<<10]})
	outer, _ := json.Marshal(string(inner))
	return outer
}

func BenchmarkUnquote16K(b *testing.B) {
	raw := benchText(b)
	b.Run("segmentio", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var s string
			if err := segjson.Unmarshal(raw, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unquoteJSON", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, ok := unquoteJSON(raw); !ok {
				b.Fatal("refused")
			}
		}
	})
}
