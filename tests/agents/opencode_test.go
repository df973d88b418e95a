package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// opencodeConfig is ~/.config/opencode/opencode.json as docs/clients.md gives it: both servers under "mcp" (remote
// with the token from the environment, {env:VAR}, and OAuth off; or local, spawned), the model an OpenAI-compatible
// provider at the scripted model (Chat Completions; opencode bundles @ai-sdk/openai-compatible), declared to take
// images (modalities, else opencode drops an image result's pixels), every permission granted, sharing and updates
// off. The environment turns off what opencode would fetch or install: the models.dev catalogue, LSP servers, its
// default plugins.
func (s *session) opencodeConfig() {
	servers := map[string]any{}
	for _, srv := range []struct{ name, url, tokenVar, bin string }{{"fs", s.fsURL, "GOALBOX_FS_TOKEN", bins.fs}, {"exec", s.execURL, "GOALBOX_EXEC_TOKEN", bins.exec}} {
		if s.http {
			servers[srv.name] = map[string]any{"type": "remote", "url": srv.url, "oauth": false,
				"headers": map[string]any{"Authorization": "Bearer {env:" + srv.tokenVar + "}"}}
		} else {
			servers[srv.name] = map[string]any{"type": "local", "command": []string{srv.bin, "-stdio", "-workspace", s.ws}}
		}
	}
	if s.official {
		servers["official"] = map[string]any{"type": "local", "command": s.officialServer()}
	}
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"model":   "scripted/gpt-4o",
		"provider": map[string]any{"scripted": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "scripted",
			"options": map[string]any{"baseURL": s.modelURL + "/v1", "apiKey": "scripted"},
			"models": map[string]any{"gpt-4o": map[string]any{"name": "gpt-4o", "tool_call": true, "attachment": true,
				"modalities": map[string]any{"input": []string{"text", "image"}, "output": []string{"text"}}}},
		}},
		"mcp":        servers,
		"permission": "allow",
		"autoupdate": false,
		"share":      "disabled",
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	dir := filepath.Join(s.home, ".config", "opencode")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), b, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *session) opencode(prompt string) string {
	s.opencodeConfig()
	return s.run(clientLimit, []string{"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1"},
		"opencode", "run", prompt)
}

func TestOpencode(t *testing.T) { runMatrix(t, "opencode", dependentCall, (*session).opencode) }
