package sandbox_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/assemble"
	"github.com/goalbox/goalbox/servers/executor/execserver"
)

// TestHostedExecutorKeepsItsOutputCap: the executor the agent hosts keeps 256 KiB of a command's output (its
// transcript holds results whole; the loop cuts what the model sees), where the executor's own default is what
// coding agents keep; a cap the options give is kept (the control: the cap is the options', not a constant of the
// client's).
func TestHostedExecutorKeepsItsOutputCap(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		set, want int
	}{{0, 256 << 10}, {32 << 10, 32 << 10}} {
		sb, err := sandbox.Host(ctx, sandbox.LocalOptions{Workspace: t.TempDir(),
			Executor: assemble.Options{Serving: execserver.Config{OutputCap: c.set}}})
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		if got := sb.Local.Health()["executor"].(protocol.ExecutorHealth).OutputCap; got != c.want {
			t.Errorf("output cap set %d: health says %d, want %d", c.set, got, c.want)
		}
		// 100 KiB of output: whole under 256 KiB, cut under 32 KiB.
		res, err := sb.Call(ctx, protocol.ToolRunCommand, json.RawMessage(`{"command":"head -c 102400 /dev/zero | tr '\\0' x"}`))
		if err != nil || res.IsError {
			t.Fatalf("command: %v %s", err, res.Text)
		}
		var out struct {
			Stdout string `json:"stdout"`
		}
		if err := json.Unmarshal(res.Structured, &out); err != nil {
			t.Fatal(err)
		}
		if whole := strings.Count(out.Stdout, "x") == 100<<10; whole != (c.want > 100<<10) {
			t.Errorf("output cap %d: %d of 102400 bytes kept", c.want, strings.Count(out.Stdout, "x"))
		}
	}
}
