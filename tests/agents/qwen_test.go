package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// qwenSettings is ~/.qwen/settings.json: Qwen Code is a fork of Gemini CLI and takes the same mcpServers (the
// tokens from the environment, $VAR expanded), with its model reached through the OpenAI Chat Completions API.
func (s *session) qwenSettings() {
	s.geminiSettings() // the same servers block
	b, err := os.ReadFile(filepath.Join(s.home, ".gemini", "settings.json"))
	if err != nil {
		s.t.Fatal(err)
	}
	var settings map[string]any
	json.Unmarshal(b, &settings)
	settings["security"] = map[string]any{"auth": map[string]any{"selectedType": "openai"}}
	// The tools offered to the model directly, not behind Qwen Code's tool_search (which the scripted model does
	// not use): alwaysLoadTools per server.
	for _, srv := range settings["mcpServers"].(map[string]any) {
		srv.(map[string]any)["alwaysLoadTools"] = true
	}
	b, _ = json.MarshalIndent(settings, "", "  ")
	os.MkdirAll(filepath.Join(s.home, ".qwen"), 0o755)
	if err := os.WriteFile(filepath.Join(s.home, ".qwen", "settings.json"), b, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *session) qwen(prompt string) string {
	s.qwenSettings()
	return s.run(clientLimit, []string{"OPENAI_BASE_URL=" + s.modelURL + "/v1", "OPENAI_API_KEY=scripted", "OPENAI_MODEL=gpt-4o"},
		"qwen", "--yolo", "-p", prompt)
}

func TestQwenCode(t *testing.T) { runMatrix(t, "qwen", dependentCall, (*session).qwen) }
