package loop

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goalbox/goalbox/pkg/headtail"
)

func TestCompactResultKeepsHeadAndTailWithinBudget(t *testing.T) {
	big := strings.Repeat("0123456789abcdef\n", 4096) + "LAST LINE\n"
	raw, _ := json.Marshal(map[string]any{"exit_code": 1, "stdout": "FIRST LINE\n" + big, "stderr": "short <err> & more", "timed_out": false})
	for _, budget := range []int{512, 4096, 16 << 10} {
		out := compactResult(ToolResult{Structured: raw}, budget)
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("budget %d: not JSON: %v", budget, err)
		}
		stdout, _ := v["stdout"].(string)
		if len(out) > budget+budget/8 || !strings.HasPrefix(stdout, "FIRST LINE") || !strings.HasSuffix(stdout, "LAST LINE\n") ||
			!strings.Contains(stdout, "bytes left out") {
			t.Errorf("budget %d: %d bytes, stdout head/tail kept: %q…%q", budget, len(out), stdout[:20], stdout[len(stdout)-20:])
		}
		if v["stderr"] != "short <err> & more" || v["exit_code"] != float64(1) {
			t.Errorf("budget %d: small fields should be untouched and unescaped: %s", budget, out[:80])
		}
	}
}

func TestCompactResultSmallIsVerbatimAndErrorsAreMarked(t *testing.T) {
	raw := json.RawMessage(`{"path":"a.go","bytes_written":3,"created":true}`)
	if got := compactResult(ToolResult{Structured: raw, Text: "ignored"}, 1024); got != `{"bytes_written":3,"created":true,"path":"a.go"}` {
		t.Errorf("got %s", got)
	}
	if got := compactResult(ToolResult{IsError: true, Text: "path escapes the workspace"}, 1024); got != `{"error":"path escapes the workspace"}` {
		t.Errorf("got %s", got)
	}
	if got := compactResult(ToolResult{Text: "plain"}, 1024); got != `{"text":"plain"}` {
		t.Errorf("got %s", got)
	}
}

func TestCompactResultCutsLongListingsAndKeepsUTF8(t *testing.T) {
	var entries []map[string]any
	for i := 0; i < 2000; i++ {
		entries = append(entries, map[string]any{"path": "dir/file" + strings.Repeat("x", i%7) + ".go", "type": "file", "size": i})
	}
	raw, _ := json.Marshal(map[string]any{"path": ".", "entries": entries, "truncated": false})
	out := compactResult(ToolResult{Structured: raw}, 2048)
	if len(out) > 2048+2048/4 || !json.Valid([]byte(out)) || !strings.Contains(out, "bytes left out") {
		t.Errorf("listing not cut to budget: %d bytes", len(out))
	}
	s := keepEnds(strings.Repeat("é", 1000), 101)
	if !utf8.ValidString(s) {
		t.Error("keepEnds split a rune")
	}
}

func TestJSONLenMatchesTheEncoder(t *testing.T) {
	values := []string{
		`{"a":"plain","b":"quote \" backslash \\ nl \n tab \t cr \r bell \u0007 bs \b ff \f","c":[1,2.5,-3e7,true,false,null,{},[]]}`,
		`{"html":"<a href='x'>&amp;</a>","utf8":"héllo wörld ✓ 🎉","sep":"\u2028\u2029","bad":"\ud800"}`,
		`[]`, `{}`, `"just a string"`, `12345678901234567890`,
	}
	for _, src := range values {
		var v any
		d := json.NewDecoder(strings.NewReader(src))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var ptrs []*string
		collectStrings(&v, &ptrs)
		got, want := jsonLen(v), len(marshalCompact(v))
		for _, p := range ptrs {
			got += quotedLen(*p) - 2
		}
		if got != want {
			t.Errorf("%s: jsonLen %d, encoded %d (%s)", src, got, want, marshalCompact(v))
		}
	}
	if got, want := quotedLen("bad \xff byte"), len(marshalCompact("bad \xff byte")); got != want {
		t.Errorf("invalid UTF-8: %d vs %d", got, want)
	}
}

// The model sees one marker for a cut, the executor's: in a compacted result as in the executor's own output.
func TestCompactResultUsesTheExecutorsMarker(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{"stdout": strings.Repeat("é", 5000)})
	var v map[string]string
	if err := json.Unmarshal([]byte(compactResult(ToolResult{Structured: raw}, 1024)), &v); err != nil {
		t.Fatal(err)
	}
	m := markerShape.FindStringSubmatch(v["stdout"])
	if m == nil {
		t.Fatalf("no marker in %q", v["stdout"])
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	if m[0] != headtail.Marker(n) || !utf8.ValidString(v["stdout"]) {
		t.Errorf("marker %q is not headtail's %q, or the cut split a character", m[0], headtail.Marker(n))
	}
}

var markerShape = regexp.MustCompile(`\n\[\.\.\. (\d+) bytes left out \.\.\.\]\n`)
