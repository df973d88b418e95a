//go:build linux

package local

// The workspace guard's cost: a command that writes 10,000 small files and one that writes one 500 MB file, through
// MCP with each command's layer applied by the guard, through MCP without the layer (commands write the workspace,
// as before the guard), and the same shell command run bare on the same filesystem, side by side in one run:
//
//	cd servers/executor && go test ./execserver/local -run '^$' -bench 'GuardWrites' -benchtime 3x -count 1

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

func BenchmarkGuardWrites(b *testing.B) {
	for _, w := range []struct{ name, command string }{
		{"10000-small-files", `mkdir %[1]s && cd %[1]s && i=0; while [ $i -lt 10000 ]; do echo "file $i" > f$i; i=$((i+1)); done`},
		{"one-500MB-file", `mkdir %[1]s && head -c 500000000 /dev/zero > %[1]s/big`},
	} {
		b.Run(w.name+"/bare", func(b *testing.B) {
			ws := b.TempDir()
			n := 0
			timedEach(b, ws, func() {
				n++
				cmd := exec.Command("sh", "-c", fmt.Sprintf(w.command, fmt.Sprint("d", n)))
				cmd.Dir = ws
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v %s", err, out)
				}
			})
		})
		for _, off := range []bool{false, true} {
			b.Run(w.name+map[bool]string{false: "/mcp-layer", true: "/mcp-no-layer"}[off], func(b *testing.B) {
				be, ws := newLocalTestBackend(b, func(c *Config) { c.NoWorkspaceLayer = off })
				srv := sandboxtest.StartServer(b, be, ws, execserver.Config{}, nil)
				n := 0
				timedEach(b, ws, func() {
					n++
					out, res := sandboxtest.CallRun(b, context.Background(), srv.Session, protocol.RunCommandInput{
						Command: fmt.Sprintf(w.command, fmt.Sprint("d", n)), TimeoutSeconds: 600})
					if res.IsError || out.ExitCode != 0 {
						b.Fatalf("%+v", out)
					}
				})
			})
		}
	}
}

// timedEach times f once per iteration, and empties ws between iterations outside the timer.
func timedEach(b *testing.B, ws string, f func()) {
	b.ResetTimer()
	for b.Loop() {
		f()
		b.StopTimer()
		ents, _ := os.ReadDir(ws)
		for _, e := range ents {
			_ = os.RemoveAll(filepath.Join(ws, e.Name()))
		}
		b.StartTimer()
	}
}
