package fsserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReadFactsFirst: a long read's text puts the lines read, the total and the truncation on its first line and
// the content after, so a client that keeps only a head (Qwen Code) or drops a line over 50 KB (opencode) still
// shows its model that the read was cut and where to read on. The content is there whole, on its own line.
func TestReadFactsFirst(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		var b strings.Builder
		for i := 1; i <= 20000; i++ {
			fmt.Fprintf(&b, "line %d of a long file\n", i)
		}
		if err := os.WriteFile(filepath.Join(ws, "long.txt"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolReadFile, Arguments: map[string]any{"path": "long.txt"}})
		if err != nil || res.IsError {
			t.Fatalf("read: %v %+v", err, res)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		first, rest, _ := strings.Cut(text, "\n")
		for _, fact := range []string{`"truncated":true`, `"total_lines":20000`, `"end_line":`} {
			if !strings.Contains(first, fact) {
				t.Errorf("the first line %.300q lacks %s", first, fact)
			}
		}
		if strings.Contains(first, `"content"`) || !strings.HasPrefix(rest, `"content":"line 1 of a long file\n`) {
			t.Errorf("the content is not on a line of its own after the facts: %.300q / %.100q", first, rest)
		}
	})
}
