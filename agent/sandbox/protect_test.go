package sandbox_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// TestLocalProtection: the in-process servers protect the project files as the servers' own commands do — the
// defaults when nothing is said, the agent's -protect/-unprotect when given — and both health reports list them.
func TestLocalProtection(t *testing.T) {
	ctx := context.Background()
	adjusted, err := pathguard.ParseProtection([]string{"*.pem"}, []string{".vscode"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    *pathguard.Protection
		want []string
	}{
		{"defaults", nil, pathguard.DefaultProtected},
		{"adjusted", adjusted, adjusted.Patterns()},
	} {
		t.Run(c.name, func(t *testing.T) {
			local, err := sandbox.StartLocal(sandbox.LocalOptions{Workspace: t.TempDir(), Protection: c.p})
			if err != nil {
				t.Fatal(err)
			}
			defer local.Close()
			h := local.Health()
			fs, ex := h["filesystem"].(protocol.FilesystemHealth), h["executor"].(protocol.ExecutorHealth)
			if ex.Confinement.Sandbox == nil || !slices.Equal(fs.Protected, c.want) || !slices.Equal(ex.Confinement.Sandbox.Protected, c.want) {
				t.Errorf("health: filesystem %q, executor %+v; want %q", fs.Protected, ex.Confinement.Sandbox, c.want)
			}
			sb, err := local.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			write := func(p string) (bool, string) {
				res, err := sb.Call(ctx, protocol.ToolWriteFile, json.RawMessage(`{"path":"`+p+`","content":"x"}`))
				if err != nil {
					t.Fatal(err)
				}
				return !res.IsError, res.Text
			}
			if ok, text := write(".git/hooks/post-checkout"); ok || !strings.Contains(text, "protected project file") {
				t.Errorf("write .git/hooks/post-checkout: %v %s", ok, text)
			}
			if ok, text := write("src/main.go"); !ok {
				t.Errorf("write src/main.go: %s", text)
			}
			vscodeOK, text := write(".vscode/tasks.json")
			if vscodeOK != (c.p != nil) {
				t.Errorf("write .vscode/tasks.json: %v %s", vscodeOK, text)
			}
			if ok, text := write("tls/key.pem"); ok == (c.p != nil) {
				t.Errorf("write tls/key.pem: %v %s", ok, text)
			}
		})
	}
}
