package sandbox

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The results Call takes apart itself are those a plain go-sdk client gets: same text, same structured content,
// same error flag; and each is taken from the table once.
func TestCallTakesResultsApartAsTheSDKWould(t *testing.T) {
	local, err := StartLocal(LocalOptions{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	ctx := context.Background()
	sb, err := Connect(ctx, local.Endpoints...)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	plain, err := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: local.Endpoints[0].URL, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: bearerTransport{token: local.Endpoints[0].Token, next: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()

	content := strings.Repeat("<a href=\"x\">&amp;</a>\t\\n café \u2028 goalbox-agent-result-X-1\n", 500)
	write, _ := json.Marshal(map[string]string{"path": "awkward.txt", "content": content})
	if res, err := sb.Call(ctx, protocol.ToolWriteFile, write); err != nil || res.IsError {
		t.Fatalf("write: %v %s", err, res.Text)
	}
	for _, args := range []string{`{"path":"awkward.txt"}`, `{"path":"missing.txt"}`, `{"path":"."}`} {
		tool := protocol.ToolReadFile
		if args == `{"path":"."}` {
			tool = protocol.ToolListFiles
		}
		taken := sb.results.seq
		got, err := sb.Call(ctx, tool, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		if sb.results.seq == taken {
			t.Errorf("%s %s: the result went through the SDK's decoder, not taken apart", tool, args)
		}
		want, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		if got.IsError != want.IsError || got.Text != resultText(want) {
			t.Errorf("%s %s: got error=%v text %.200q, the go-sdk gives error=%v text %.200q", tool, args, got.IsError, got.Text, want.IsError, resultText(want))
		}
		var gotStructured any
		if len(got.Structured) > 0 {
			if err := json.Unmarshal(got.Structured, &gotStructured); err != nil {
				t.Fatalf("structured content is not JSON: %v", err)
			}
		}
		if want.StructuredContent == nil && gotStructured != nil || want.StructuredContent != nil && !reflect.DeepEqual(gotStructured, want.StructuredContent) {
			t.Errorf("%s %s: structured %.300s, the go-sdk gives %.300v", tool, args, got.Structured, want.StructuredContent)
		}
	}
	if n := len(sb.results.pending); n != 0 {
		t.Errorf("%d results left in the table after their calls returned", n)
	}
}
