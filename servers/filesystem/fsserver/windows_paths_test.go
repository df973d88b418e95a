package fsserver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWindowsStyleToolErrors: Windows-style paths (docs/confinement-files.md, "Windows-style paths") come back from
// every tool as tool errors that say what was wrong and what is allowed, on both transports, and change nothing;
// a name that only looks like a device name works.
func TestWindowsStyleToolErrors(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		files(t, ws, map[string]string{"a.txt": "hello\n"})
		allowed := `paths are relative to the workspace with "/" between names`
		for _, c := range []struct{ path, says string }{
			{`C:\x.txt`, `drive letter`},
			{`c:/x.txt`, `drive letter`},
			{`src\main.go`, `is not a separator here`},
			{`\\server\share\x.txt`, `UNC or device path`},
			{`//server/share/x.txt`, `UNC or device path`},
			{`src/nul.txt`, `reserved device name NUL`},
			{`CON`, `reserved device name CON`},
			{`a.txt:stream`, `has a colon`},
			{`notes.txt.`, `may not end in a dot or a space`},
			{`what?.md`, `does not allow in a file name`},
		} {
			fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": c.path, "content": "x"}, c.says, "invalid path")
			fails(t, cs, protocol.ToolReadFile, map[string]any{"path": c.path}, c.says)
			fails(t, cs, protocol.ToolEditFile, map[string]any{"path": c.path, "old_text": "a", "new_text": "b"}, c.says)
			fails(t, cs, protocol.ToolListFiles, map[string]any{"path": c.path}, c.says)
			fails(t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": "x", "path": c.path}, c.says)
			fails(t, cs, protocol.ToolDeletePath, map[string]any{"path": c.path}, c.says)
			fails(t, cs, protocol.ToolMovePath, map[string]any{"source": "a.txt", "destination": c.path}, c.says)
		}
		fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": `src\main.go`, "content": "x"}, allowed)
		entries, err := os.ReadDir(ws)
		if err != nil || len(entries) != 1 || entries[0].Name() != "a.txt" {
			t.Errorf("refused calls changed the workspace: %v %v", entries, err)
		}
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "src/console.go", "content": "package src\n"})
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "/workspace/nullable.txt", "content": "x"})
		if _, err := os.Stat(filepath.Join(ws, "src", "console.go")); err != nil {
			t.Error(err)
		}
	})
}
