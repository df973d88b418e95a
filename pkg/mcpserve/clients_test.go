package mcpserve

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerTransport sends one token on every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestSeveralTokens: with -token a,b each token is accepted and names its client to a stateless call ("token 2",
// of 2 clients), never the token itself; a session's call, and a server with one token, name none. The list itself, a part of a
// token and an empty token are refused (the positive controls of the accepted ones), and Load refuses a stray comma.
func TestSeveralTokens(t *testing.T) {
	srv := newEraServer()
	mcp.AddTool(srv, &mcp.Tool{Name: "client", Annotations: Annotations(Hints{Title: "Client", ReadOnly: true, Idempotent: true})},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{ Client string }, error) {
			name := StatelessClient(ctx)
			if name != "" {
				name += " of " + strconv.Itoa(StatelessClients(ctx))
			}
			return nil, struct{ Client string }{name}, nil
		})
	client := func(url, token, version string) string {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerTransport(token)}},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			return "refused: " + err.Error()
		}
		defer cs.Close()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "client", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("client: %v %+v", err, res)
		}
		return res.StructuredContent.(map[string]any)["Client"].(string)
	}
	r, err := Start(srv, Config{Addr: "127.0.0.1:0", Token: "first-token,second-token"}, func() struct{} { return struct{}{} }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct{ token, version, want string }{
		{"first-token", StatelessVersion, "token 1 of 2"},
		{"second-token", StatelessVersion, "token 2 of 2"},
		{"second-token", "2025-11-25", ""},
		{"first-token,second-token", StatelessVersion, "refused"},
		{"second", StatelessVersion, "refused"},
		{"", StatelessVersion, "refused"},
	} {
		if got := client(r.URL, c.token, c.version); !strings.HasPrefix(got, c.want) || c.want == "" && got != "" {
			t.Errorf("token %q, %s: %q, want %q", c.token, c.version, got, c.want)
		}
	}
	one, err := Start(srv, Config{Addr: "127.0.0.1:0", Token: "only-token"}, func() struct{} { return struct{}{} }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if got := client(one.URL, "only-token", StatelessVersion); got != "" {
		t.Errorf("one token: the client is %q, want none (clients cannot be told apart)", got)
	}
	var cfg Config
	if _, err := Load(&cfg, "GOALBOX_TEST_", []string{"server", "-workspace", t.TempDir(), "-token", "a,,b"}, nil); err == nil || !strings.Contains(err.Error(), "empty token") {
		t.Errorf("-token a,,b: %v", err)
	}
}
