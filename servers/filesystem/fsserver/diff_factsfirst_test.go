package fsserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDiffFactsFirst: a diff over the cap puts truncated, the whole diff's size (diff_bytes) and a note on how to
// narrow it on its first line, the files and the diff after, so a client that keeps only a head of a long result
// (Qwen Code) or drops a line over 50 KB (opencode) still shows its model that the diff was cut, by how much and
// what to ask next. The control: a diff under the cap is whole, its diff_bytes its length, and has no note.
func TestDiffFactsFirst(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		// Three files of 15.5 KB each, every line changed: about 96 KB of diff, three times the 32 KiB cap.
		content := func(tag string) string {
			var b strings.Builder
			for i := range 500 {
				fmt.Fprintf(&b, "%s line %03d of a changed file\n", tag, i)
			}
			return b.String()
		}
		before := map[string]string{"small.txt": "one\n"}
		for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
			before[f] = content("old")
		}
		files(t, ws, before)
		ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})
		after := map[string]string{"small.txt": "two\n"}
		for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
			after[f] = content("new")
		}
		files(t, ws, after)

		call := func(args map[string]any) (string, map[string]any) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolDiff, Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("diff %v: %v %+v", args, err, res)
			}
			return res.Content[0].(*mcp.TextContent).Text, res.StructuredContent.(map[string]any)
		}

		text, out := call(map[string]any{"from": "cp-1"})
		first, rest, _ := strings.Cut(text, "\n")
		for _, fact := range []string{`"truncated":true`, `"diff_bytes":`, `"note":"the diff of the 4 files listed is`, "paths"} {
			if !strings.Contains(first, fact) {
				t.Errorf("the first line %.400q lacks %s", first, fact)
			}
		}
		if strings.Contains(first, `"diff":`) || strings.Contains(first, `"files":`) || !strings.Contains(rest, `"diff":"--- a/a.txt`) {
			t.Errorf("the files and the diff are not after the facts: %.400q / %.200q", first, rest)
		}
		whole, shown := int(out["diff_bytes"].(float64)), len(out["diff"].(string))
		if whole < 3*2*15500 || shown > 32<<10+200 {
			t.Errorf("diff_bytes %d for about 96 KB of diff; the text shown is %d bytes", whole, shown)
		}

		_, small := call(map[string]any{"from": "cp-1", "paths": []string{"small.txt"}})
		if small["truncated"] != false || int(small["diff_bytes"].(float64)) != len(small["diff"].(string)) || small["note"] != nil {
			t.Errorf("a diff under the cap: %v", small)
		}
	})
}
