package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// geminiSettings is ~/.gemini/settings.json as docs/clients.md gives it: both servers, the tokens from the
// environment ($VAR is expanded by Gemini CLI in its settings), telemetry, usage statistics and update checks off.
func (s *session) geminiSettings() {
	servers := map[string]any{}
	if s.http {
		servers["fs"] = map[string]any{"httpUrl": s.fsURL, "headers": map[string]any{"Authorization": "Bearer $GOALBOX_FS_TOKEN"}, "trust": true}
		servers["exec"] = map[string]any{"httpUrl": s.execURL, "headers": map[string]any{"Authorization": "Bearer $GOALBOX_EXEC_TOKEN"}, "trust": true}
	} else {
		servers["fs"] = map[string]any{"command": bins.fs, "args": []string{"-stdio", "-workspace", s.ws}, "trust": true}
		servers["exec"] = map[string]any{"command": bins.exec, "args": []string{"-stdio", "-workspace", s.ws}, "trust": true}
	}
	if s.official {
		cmd := s.officialServer()
		servers["official"] = map[string]any{"command": cmd[0], "args": cmd[1:], "trust": true}
	}
	settings := map[string]any{
		"mcpServers": servers,
		"privacy":    map[string]any{"usageStatisticsEnabled": false},
		"telemetry":  map[string]any{"enabled": false},
		"general":    map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"security":   map[string]any{"folderTrust": map[string]any{"enabled": false}, "auth": map[string]any{"selectedType": "gemini-api-key"}},
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	dir := filepath.Join(s.home, ".gemini")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *session) gemini(prompt string) string {
	s.geminiSettings()
	return s.run(clientLimit, []string{"GOOGLE_GEMINI_BASE_URL=" + s.modelURL, "GEMINI_API_KEY=scripted"},
		"gemini", "--yolo", "--model", "gemini-2.5-pro", "-p", prompt)
}

func TestGeminiCLI(t *testing.T) { runMatrix(t, "gemini", geminiDependentCall, (*session).gemini) }
