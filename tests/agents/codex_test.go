package agents

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// codexConfig is $CODEX_HOME/config.toml as docs/clients.md gives it: the model provider pointed at the scripted
// model (Responses API), both servers with the tokens from the environment (bearer_token_env_var), every tool
// approved (Codex exec refuses a tool marked destructive unless its approval mode says so), analytics, update
// checks and history off.
func (s *session) codexConfig() string {
	home := filepath.Join(s.home, ".codex")
	os.MkdirAll(home, 0o755)
	cfg := fmt.Sprintf(`model = "scripted"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[history]
persistence = "none"

[otel]
exporter = "none"

[model_providers.scripted]
name = "scripted"
base_url = "%s/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`, s.modelURL)
	for _, srv := range []struct{ name, url, tokenVar, bin string }{{"fs", s.fsURL, "GOALBOX_FS_TOKEN", bins.fs}, {"exec", s.execURL, "GOALBOX_EXEC_TOKEN", bins.exec}} {
		if s.http {
			cfg += fmt.Sprintf("\n[mcp_servers.%s]\nurl = %q\nbearer_token_env_var = %q\ndefault_tools_approval_mode = \"approve\"\n", srv.name, srv.url, srv.tokenVar)
		} else {
			cfg += fmt.Sprintf("\n[mcp_servers.%s]\ncommand = %q\nargs = [\"-stdio\", \"-workspace\", %q]\ndefault_tools_approval_mode = \"approve\"\n", srv.name, srv.bin, s.ws)
		}
	}
	if s.official {
		cmd := s.officialServer()
		cfg += fmt.Sprintf("\n[mcp_servers.official]\ncommand = %q\nargs = [%q]\ndefault_tools_approval_mode = \"approve\"\n", cmd[0], cmd[1])
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o644); err != nil {
		s.t.Fatal(err)
	}
	return home
}

func (s *session) codex(prompt string) string {
	home := s.codexConfig()
	return s.run(clientLimit, []string{"CODEX_HOME=" + home, "SCRIPTED_API_KEY=scripted"},
		"codex", "exec", "--skip-git-repo-check", prompt)
}

func TestCodex(t *testing.T) { runMatrix(t, "codex", dependentCall, (*session).codex) }
