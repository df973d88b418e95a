package execserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readOutput calls sandbox_read_output; the result's text when the tool refused.
func readOutput(t *testing.T, cs *mcp.ClientSession, args map[string]any) (protocol.ReadOutputOutput, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolReadOutput, Arguments: args})
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if res.IsError {
		return protocol.ReadOutputOutput{}, res.Content[0].(*mcp.TextContent).Text
	}
	var out protocol.ReadOutputOutput
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	// The text puts where the page is before its bytes: a client that keeps a head keeps next_offset.
	text := res.Content[0].(*mcp.TextContent).Text
	if first, _, _ := strings.Cut(text, "\n"); !strings.Contains(first, `"next_offset":`) || strings.Contains(first, `"text":`) {
		t.Fatalf("the result's first line is %.200q, want the page's place before its bytes", first)
	}
	return out, ""
}

// TestReadOutputTool: sandbox_read_output returns a kept output page by page through a tool (text, and binary as
// base64), the same bytes resources/read serves, to the session that ran the command; another session, which
// reads it through resources/read as the control shows it cannot, is refused through the tool as well; bad pages
// and URIs with a query are refused with what to give.
func TestReadOutputTool(t *testing.T) {
	s := startOutputsServerAs(t, execserver.Config{OutputCap: 4096})
	cs := s.connect(t)
	out, _ := run(t, cs, `seq 1 30000; head -c 100000 /dev/urandom | tee noise.bin >&2`)
	var want bytes.Buffer
	for i := 1; i <= 30000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	noise, err := os.ReadFile(filepath.Join(s.ws, "noise.bin"))
	if err != nil {
		t.Fatal(err)
	}

	// The default page is the output cap.
	first, refused := readOutput(t, cs, map[string]any{"uri": out.StdoutResource})
	if refused != "" || first.Offset != 0 || first.Length != 4096 || first.NextOffset != 4096 || first.Text != want.String()[:4096] ||
		first.Size != int64(want.Len()) || !first.Complete {
		t.Fatalf("first page: %+v %s", first, refused)
	}
	for _, stream := range []struct {
		uri  string
		want []byte
	}{{out.StdoutResource, want.Bytes()}, {out.StderrResource, noise}} {
		var all []byte
		for len(all) < len(stream.want) {
			p, refused := readOutput(t, cs, map[string]any{"uri": stream.uri, "offset": len(all), "length": 65536})
			if refused != "" || p.Offset != int64(len(all)) || p.Length == 0 {
				t.Fatalf("%s at %d: %+v %s", stream.uri, len(all), p, refused)
			}
			data := []byte(p.Text)
			if p.Base64 != "" {
				data, _ = base64.StdEncoding.DecodeString(p.Base64)
			}
			all = append(all, data...)
			if p.NextOffset != int64(len(all)) {
				t.Fatalf("%s: next_offset %d after %d bytes", stream.uri, p.NextOffset, len(all))
			}
		}
		if !bytes.Equal(all, stream.want) {
			t.Errorf("%s read back through the tool: %d bytes, not the stream's %d", stream.uri, len(all), len(stream.want))
		}
	}

	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"uri": out.StdoutResource, "length": 65537}, "from 1 to 65536"},
		{map[string]any{"uri": out.StdoutResource + "?offset=5"}, "the page as the offset and length arguments"},
		{map[string]any{"uri": "file:///etc/passwd"}, "not the URI of an output"},
		{map[string]any{"uri": out.StdoutResource, "offset": 1 << 40}, "offset"},
	} {
		if _, refused := readOutput(t, cs, bad.args); !strings.Contains(refused, bad.want) {
			t.Errorf("%v: %q, want a refusal saying %q", bad.args, refused, bad.want)
		}
	}

	// Another session: refused by the tool as by the resource. Control: the same call in the session that ran the
	// command answers (above), so the refusal is the owner rule, not a broken URI.
	other := s.connect(t)
	if _, refused := readOutput(t, other, map[string]any{"uri": out.StdoutResource}); !strings.Contains(refused, "only by the MCP session whose command made it") {
		t.Fatalf("another session's read through the tool: %q, want a refusal", refused)
	}
}
