package mcpserve

import (
	"encoding/json"
	"net/http"
	"strings"
)

// How a client learns what to send. A coding agent that gets a 401 shows its person (or its model) what it makes of
// it, each its own way: the WWW-Authenticate header's error_description (Codex logs the header), the body (Claude
// Code, with words after "token:" or "Bearer" redacted as secrets), or, after an OAuth discovery, the body of the
// discovery or registration endpoint (mcp-remote, Qwen Code: "Dynamic Client Registration rejected (HTTP 404):
// <body>"). So each of those says the same thing, in words that survive the redaction: this server takes one
// static token, not OAuth, and how to pass it. docs/clients.md shows each client's configuration.

// howToAuthenticate is the part of every refusal that says what to do; no secret-looking "token: X" or "Bearer X"
// in it, which a client's redaction would eat.
const howToAuthenticate = "This server takes one static token, not OAuth. Send the header Authorization with the value \"Bearer\", a space, " +
	"then the token the server was started with (-token, or GOALBOX_FS_TOKEN or GOALBOX_EXEC_TOKEN in its environment) or, " +
	"when none was given, the one it generated at start: printed on its standard error and written to its token file (-token-file). " +
	"docs/clients.md shows the configuration of each MCP client."

// authChallenge is the WWW-Authenticate header of a 401 (RFC 6750): quoted strings, so no quote or backslash.
const authChallenge = `Bearer realm="goalbox", error="invalid_token", error_description="` +
	`send Authorization with Bearer and the static token the server was started with or generated (its token file); this server does not do OAuth"`

// bearer requires "Authorization: Bearer <token>". The scheme is case-insensitive and may be followed by more than
// one space (RFC 9110 section 11.1); the token is compared in constant time, with each of several (clients.go).
func bearer(token string, next http.Handler) http.Handler {
	wants := tokens(token) // several: clients.go
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := strings.TrimSpace(r.Header.Get("Authorization"))
		scheme, got, _ := strings.Cut(header, " ")
		n := matchToken([]byte(strings.TrimLeft(got, " ")), wants)
		if !strings.EqualFold(scheme, "Bearer") || n == 0 {
			what := "The request has no Authorization header (401)."
			switch {
			case header != "" && !strings.EqualFold(scheme, "Bearer"):
				what = "The request's Authorization header is not of the Bearer scheme (401)."
			case header != "":
				what = "The request's Authorization header holds a wrong token (401)."
			}
			w.Header().Set("WWW-Authenticate", authChallenge)
			httpError(w, http.StatusUnauthorized, what+" "+howToAuthenticate)
			return
		}
		next.ServeHTTP(w, withToken(r, n, len(wants)))
	})
}

// oauthPaths are where MCP clients look for OAuth after a 401 (the protected resource's and the authorization
// server's metadata, at the root and under the endpoint's path, and the default registration, authorization and
// token endpoints of a server without metadata).
var oauthPaths = []string{
	"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/",
	"/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/",
	"/.well-known/openid-configuration", "/.well-known/openid-configuration/",
	"/register", "/authorize", "/token",
}

// noOAuth answers an OAuth discovery or registration request: there is none, and what to do instead, as an OAuth
// error object (error, error_description), which OAuth clients show.
func noOAuth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]string{"error": "invalid_request", "error_description": "No OAuth here. " + howToAuthenticate})
}
