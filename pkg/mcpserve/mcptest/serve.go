package mcptest

import (
	"context"
	"net/http"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The protocol eras a server speaks, each named by its first version: 2025-11-25 keeps sessions (initialize,
// Mcp-Session-Id), 2026-07-28 has none (server/discover, the version in each request's _meta). Tests of what a
// client sees run once per era (Eras), with the client pinned to it (ClientOptions).
const (
	SessionEra   = "2025-11-25"
	StatelessEra = "2026-07-28"
)

// Eras lists both, older first.
var Eras = []string{SessionEra, StatelessEra}

// ClientOptions pins a go-sdk client to version; "" leaves the SDK's choice (its newest, 2026-07-28 in v1.8.0).
func ClientOptions(version string) *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: version}
}

// Serve serves srv over streamable HTTP on a free loopback port, as mcpserve.Start does for the agent, and connects
// a go-sdk client to it with the token the server generated, speaking the SDK's newest version. health is the
// server's report for /healthz (mcpserve.NoHealth for none). Both end with the test.
func Serve[H any](t testing.TB, srv *mcp.Server, health func() H) *mcp.ClientSession {
	t.Helper()
	return ServeVersion(t, srv, health, "")
}

// ServeVersion is Serve with the client pinned to a protocol version (SessionEra, StatelessEra).
func ServeVersion[H any](t testing.TB, srv *mcp.Server, health func() H, version string) *mcp.ClientSession {
	t.Helper()
	cs, _ := ServeVersionRunning(t, srv, health, version)
	return cs
}

// ServeVersionRunning is ServeVersion that also gives the server, for tests that connect more clients to it.
func ServeVersionRunning[H any](t testing.TB, srv *mcp.Server, health func() H, version string) (*mcp.ClientSession, *mcpserve.Running) {
	t.Helper()
	r, err := mcpserve.Start(srv, mcpserve.Config{Addr: "127.0.0.1:0"}, health, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return Connect(t, r, version), r
}

// Connect connects one more go-sdk client, pinned to version ("" for the SDK's newest), to a server Start serves.
// It checks that the client got the era it asked for.
func Connect(t testing.TB, r *mcpserve.Running, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: r.URL, MaxRetries: -1, HTTPClient: &http.Client{Transport: Bearer(r.Token, nil)}}, ClientOptions(version))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("the client asked for protocol %s and got %s", version, got)
	}
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
