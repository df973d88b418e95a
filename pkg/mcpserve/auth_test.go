package mcpserve

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// secretLike is how coding agents redact what looks like a secret in an error they show (Claude Code eats the word
// after "bearer token:" and the value after "Bearer "): the two shapes, as the test's stand-in for their rules.
var secretLike = regexp.MustCompile(`(?i)\b(?:token|authorization|bearer)\b\s*:\s*\S+|\bbearer\s+[A-Za-z0-9<>._~+/-]+`)

// TestAuthExplained: a 401 says, in its WWW-Authenticate header (RFC 6750: error, error_description) and its body,
// what was wrong and how to pass the token, and the body still says it after a client's secret redaction (the
// message before, "a wrong bearer token: this server requires the header Authorization: Bearer <token>", lost
// "this" and "<token>": the positive control); the OAuth discovery and registration paths a client tries next
// answer that there is no OAuth and what to do, as an OAuth error object.
func TestAuthExplained(t *testing.T) {
	r, err := Start(newEchoServer(), Config{Addr: "127.0.0.1:0"}, NoHealth, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	resp := post(t, r.URL, func(req *http.Request) { req.Header.Set("Authorization", "Bearer wrong") })
	body, _ := io.ReadAll(resp.Body)
	challenge := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != 401 || !strings.Contains(challenge, `error="invalid_token"`) || !strings.Contains(challenge, `error_description="send Authorization with Bearer and the static token`) {
		t.Errorf("401 %d, WWW-Authenticate %q", resp.StatusCode, challenge)
	}
	var msg struct{ Error string }
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if shown := secretLike.ReplaceAllString(msg.Error, "[REDACTED]"); shown != msg.Error {
		t.Errorf("the 401's text loses words to a client's redaction: %s", shown)
	}
	before := "a wrong bearer token: this server requires the header Authorization: Bearer <token>, with the token it was started with"
	if shown := secretLike.ReplaceAllString(before, "[REDACTED]"); shown == before {
		t.Errorf("positive control: the redaction stand-in left the old message whole: %s", shown)
	}

	base := strings.TrimSuffix(r.URL, "/mcp")
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
		"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/register"} {
		method := http.MethodGet
		if path == "/register" {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{"redirect_uris":["http://localhost/cb"]}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var oauth struct {
			Error            string `json:"error"`
			ErrorDescription string `json:"error_description"`
		}
		err = json.NewDecoder(resp.Body).Decode(&oauth)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 404 || oauth.Error != "invalid_request" || !strings.Contains(oauth.ErrorDescription, "No OAuth here. This server takes one static token") {
			t.Errorf("%s %s: %d %+v %v", method, path, resp.StatusCode, oauth, err)
		}
	}
}
