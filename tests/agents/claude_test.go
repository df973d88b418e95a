package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// claudeMCPConfig is the servers as docs/clients.md gives them to Claude Code (a .mcp.json, here passed with
// --mcp-config): over HTTP with the token from the environment (Claude Code expands ${VAR} in it), or spawned.
func (s *session) claudeMCPConfig() string {
	servers := map[string]any{}
	if s.http {
		servers["fs"] = map[string]any{"type": "http", "url": s.fsURL, "headers": map[string]any{"Authorization": "Bearer ${GOALBOX_FS_TOKEN}"}}
		servers["exec"] = map[string]any{"type": "http", "url": s.execURL, "headers": map[string]any{"Authorization": "Bearer ${GOALBOX_EXEC_TOKEN}"}}
	} else {
		servers["fs"] = map[string]any{"type": "stdio", "command": bins.fs, "args": []string{"-stdio", "-workspace", s.ws}}
		servers["exec"] = map[string]any{"type": "stdio", "command": bins.exec, "args": []string{"-stdio", "-workspace", s.ws}}
	}
	if s.official {
		cmd := s.officialServer()
		servers["official"] = map[string]any{"type": "stdio", "command": cmd[0], "args": cmd[1:]}
	}
	return s.writeClaudeMCPConfig(servers)
}

// mcpRemoteMCPConfig is the servers as docs/clients.md gives them to Claude Code through mcp-remote (the stdio
// bridge to a remote server that clients without HTTP support use): each a stdio server that runs mcp-remote with the
// URL, HTTP only, and the token in a header from the environment.
func (s *session) mcpRemoteMCPConfig() string {
	servers := map[string]any{}
	for name, srv := range map[string]struct{ url, tokenVar string }{"fs": {s.fsURL, "GOALBOX_FS_TOKEN"}, "exec": {s.execURL, "GOALBOX_EXEC_TOKEN"}} {
		servers[name] = map[string]any{"type": "stdio", "command": "mcp-remote",
			"args": []string{srv.url, "--transport", "http-only", "--header", "Authorization:Bearer ${" + srv.tokenVar + "}"}}
	}
	return s.writeClaudeMCPConfig(servers)
}

func (s *session) writeClaudeMCPConfig(servers map[string]any) string {
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	file := filepath.Join(s.home, "mcp.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		s.t.Fatal(err)
	}
	return file
}

// claude runs Claude Code in print mode against the scripted model (Anthropic Messages), with the goalbox tools
// allowed and everything else it would phone home for off.
func (s *session) claude(prompt string) string { return s.claudeWith(s.claudeMCPConfig(), prompt) }

// claudeViaMCPRemote runs Claude Code with the servers reached through mcp-remote.
func (s *session) claudeViaMCPRemote(prompt string) string {
	return s.claudeWith(s.mcpRemoteMCPConfig(), prompt)
}

func (s *session) claudeWith(cfg, prompt string) string {
	return s.run(clientLimit, []string{"ANTHROPIC_BASE_URL=" + s.modelURL, "ANTHROPIC_API_KEY=scripted",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1",
		// MCP tools offered to the model directly, not behind Claude Code's tool search (which the scripted model does not use).
		"ENABLE_TOOL_SEARCH=false",
		// Server start-up may take a minute on a loaded machine (mcp-remote, a Node process, then its connection);
		// Claude Code's default wait is shorter, and it then runs without the server's tools.
		"MCP_TIMEOUT=120000"},
		"claude", "-p", prompt, "--model", "claude-sonnet-4-5", "--mcp-config", cfg, "--strict-mcp-config",
		"--allowedTools", "mcp__fs", "mcp__exec", "mcp__official")
}

func TestClaudeCode(t *testing.T) { runMatrix(t, "claude", dependentCall, (*session).claude) }

// TestMCPRemote: Claude Code with both servers behind mcp-remote, over HTTP with a token (mcp-remote bridges a
// remote server to a client's stdio; there is no stdio row).
func TestMCPRemote(t *testing.T) {
	t.Parallel()
	st := steps(dependentCall)
	s := newSession(t, true, plan(st))
	out := s.claudeViaMCPRemote("Run the planned calls.")
	t.Logf("claude through mcp-remote printed %d lines; the model was asked %d times", len(lines(out)), len(s.model.Requests()))
	checkSteps(t, s.model, st, out)
}
