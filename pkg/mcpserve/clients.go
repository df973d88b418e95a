package mcpserve

// Telling stateless clients apart. A request of the stateless era (2026-07-28) has no session, so what a server
// wants to share fairly between clients (the executor's background processes and kept outputs) needs another name
// for the client. The address does not serve: every local client is 127.0.0.1, and behind Docker's port publishing
// or a NAT every client is one address, so a quota per address would be one quota for all of them. The bearer
// token does, when there are several: -token accepts a comma-separated list, every token in it is accepted, and a
// request's client is the token it sent ("token 2": its place in the list, never the token itself). With one token
// the clients cannot be told apart, and StatelessClient says so ("").

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
)

// tokens are the bearer tokens the endpoint accepts: token split at its commas.
func tokens(token string) [][]byte {
	var out [][]byte
	for _, t := range strings.Split(token, ",") {
		out = append(out, []byte(t))
	}
	return out
}

// matchToken is got's place in wants, from 1, or 0 when it is none of them. Every token is compared, in constant
// time, whichever matches; an empty one (a stray comma, which Load refuses) matches nothing.
func matchToken(got []byte, wants [][]byte) int {
	n := 0
	for i, w := range wants {
		if len(w) > 0 && subtle.ConstantTimeCompare(got, w) == 1 {
			n = i + 1
		}
	}
	return n
}

// tokenKey marks a request's context with the place of the token it sent, when the endpoint accepts several.
type tokenKey struct{}

// tokenPlace is the nth of the endpoint's tokens.
type tokenPlace struct{ n, of int }

// withToken records on r which of several tokens it sent.
func withToken(r *http.Request, n, of int) *http.Request {
	if of < 2 {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), tokenKey{}, tokenPlace{n, of}))
}

// clientOf is the name of the client that sent a request with context ctx, when clients can be told apart: "token
// N" for the Nth of several tokens, "" otherwise; and how many clients there are (the tokens), 0 otherwise.
func clientOf(ctx context.Context) (string, int) {
	if t, ok := ctx.Value(tokenKey{}).(tokenPlace); ok && t.n > 0 {
		return "token " + strconv.Itoa(t.n), t.of
	}
	return "", 0
}

// statelessClientKey marks the context of a stateless call with its client's name and how many clients there are.
type statelessClientKey struct{}

type statelessClient struct {
	name string
	of   int
}

// StatelessClient names the client of a stateless tool call ctx belongs to ("token 2": the second token of
// -token), or "" when the clients cannot be told apart (one token, none, a session's call, stdio).
func StatelessClient(ctx context.Context) string {
	v, _ := ctx.Value(statelessClientKey{}).(statelessClient)
	return v.name
}

// StatelessClients is how many clients StatelessClient tells apart (the tokens of -token), so that a server can
// give each its share of what they all share; 0 when it tells none apart.
func StatelessClients(ctx context.Context) int {
	v, _ := ctx.Value(statelessClientKey{}).(statelessClient)
	return v.of
}
