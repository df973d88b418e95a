package sandbox

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The results Call takes apart itself are those a plain go-sdk client gets: same text, same structured content,
// same error flag; and each is taken from the table once. Over both of the agent's transports: the in-memory link
// to the servers it hosts, and HTTP to servers running elsewhere.
func TestCallTakesResultsApartAsTheSDKWould(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		ws := t.TempDir()
		sb, plain := inMemory(t, ws), plainInMemory(t, ws)
		compareResults(t, sb, plain)
	})
	t.Run("http", func(t *testing.T) {
		local, err := StartLocal(LocalOptions{Workspace: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer local.Close()
		r, err := mcpserve.Start(local.servers[0].srv, mcpserve.Config{Addr: "127.0.0.1:0"}, mcpserve.NoHealth, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		ctx := context.Background()
		sb, err := Connect(ctx, Endpoint{URL: r.URL, Token: r.Token})
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		plain, err := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "0"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.URL, DisableStandaloneSSE: true,
				HTTPClient: &http.Client{Transport: bearerTransport{token: r.Token, next: http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		compareResults(t, sb, plain)
	})
}

// inMemory is the agent's client of both servers hosted over ws.
func inMemory(t testing.TB, ws string) *Client {
	local, err := StartLocal(LocalOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	sb, err := local.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// plainInMemory is a plain go-sdk client of a filesystem server hosted over ws, on an in-memory link the client
// reads as it comes.
func plainInMemory(t testing.TB, ws string) *mcp.ClientSession {
	local, err := StartLocal(LocalOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	conns, err := local.serve()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "0"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: conns[0], Writer: conns[0]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	return plain
}

func compareResults(t *testing.T, sb *Client, plain *mcp.ClientSession) {
	ctx := context.Background()
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
