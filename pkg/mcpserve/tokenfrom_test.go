package mcpserve

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenFrom: the server started with -token-from requires the file's token (a final newline, as a Secret's
// file has, is not part of it) and refuses another, which it would take with -token (the control: the refusal is
// the file's doing); bad files and -token beside it are refused at start with what to give instead.
func TestTokenFrom(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("sandbox-a-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	status := func(cfg Config, token string) int {
		t.Helper()
		r, err := Start(newEchoServer(), cfg, NoHealth, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		resp := post(t, r.URL, func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+token) })
		resp.Body.Close()
		return resp.StatusCode
	}
	var cfg Config
	if _, err := Load(&cfg, "GOALBOX_TOKENFROM_", []string{"srv", "-workspace", dir, "-addr", "127.0.0.1:0", "-token-from", file}, nil); err != nil {
		t.Fatal(err)
	}
	if cfg.Token != "sandbox-a-token" {
		t.Fatalf("token read: %q", cfg.Token)
	}
	if got := status(cfg, "sandbox-a-token"); got != http.StatusOK {
		t.Errorf("the file's token: HTTP %d, want 200", got)
	}
	if got := status(cfg, "sandbox-b-token"); got != http.StatusUnauthorized {
		t.Errorf("another sandbox's token: HTTP %d, want 401", got)
	}
	if got := status(Config{Addr: "127.0.0.1:0", Token: "sandbox-b-token"}, "sandbox-b-token"); got != http.StatusOK {
		t.Errorf("control: a server given that token takes it: HTTP %d", got)
	}

	for _, c := range []struct{ content, says string }{
		{"", "the file is empty"},
		{" \n", "the file is empty"},
		{"none\n", "serving without a token is -token none"},
		{"a b", "white space inside"},
		{strings.Repeat("x", maxTokenFromBytes+1), "more than 4096 bytes"},
		{"a,,b", "empty token"},
	} {
		if err := os.WriteFile(file, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		var cfg Config
		_, err := Load(&cfg, "GOALBOX_TOKENFROM_", []string{"srv", "-workspace", dir, "-token-from", file}, nil)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("file %.20q: %v, want an error saying %q", c.content, err, c.says)
		}
	}
	var both Config
	if _, err := Load(&both, "GOALBOX_TOKENFROM_", []string{"srv", "-workspace", dir, "-token-from", file, "-token", "t"}, nil); err == nil || !strings.Contains(err.Error(), "give the token one way") {
		t.Errorf("-token with -token-from: %v", err)
	}
	var missing Config
	if _, err := Load(&missing, "GOALBOX_TOKENFROM_", []string{"srv", "-workspace", dir, "-token-from", filepath.Join(dir, "absent")}, nil); err == nil || !strings.Contains(err.Error(), "-token-from: open") {
		t.Errorf("a missing file: %v", err)
	}
}
