package mcptest

import (
	"context"
	"net/http"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve serves srv over streamable HTTP on a free loopback port, as mcpserve.Start does for the agent, and connects
// a go-sdk client to it with the token the server generated. health is the server's report for /healthz (mcpserve.NoHealth for none). Both end with the
// test.
func Serve[H any](t testing.TB, srv *mcp.Server, health func() H) *mcp.ClientSession {
	t.Helper()
	r, err := mcpserve.Start(srv, mcpserve.Config{Addr: "127.0.0.1:0"}, health, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: r.URL, MaxRetries: -1, HTTPClient: &http.Client{Transport: Bearer(r.Token, nil)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Bearer is a RoundTripper that sends "Authorization: Bearer token" on every request that has no Authorization
// header of its own, through next (http.DefaultTransport when nil); an empty token sends none.
func Bearer(token string, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return bearerRT{token: token, next: next}
}

type bearerRT struct {
	token string
	next  http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" || r.Header.Get("Authorization") != "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
