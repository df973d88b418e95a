//go:build linux

package local

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkWorkspaceFootprint is what one workspace's executor keeps running: the server over stdio (this test
// binary serving, as in TestStdio), after one command, with one background process started, once its ready
// sandboxes are made again. It reports the processes of the server's tree (the server and every helper, the
// background process's own included) and their proportional set size summed from /proc/PID/smaps_rollup.
func BenchmarkWorkspaceFootprint(b *testing.B) {
	var procs, pss float64
	for range b.N {
		ws := b.TempDir()
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), stdioServerEnv+"="+ws)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "footprint"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		sandboxtest.MustRun(b, cs, protocol.RunCommandInput{Command: "true"})
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolStartProcess,
			Arguments: protocol.StartProcessInput{Command: "sleep 600"}}); err != nil {
			b.Fatal(err)
		}
		// The pools refill in the background: measure once the count holds still for a second.
		var tree []int
		for last, still := -1, 0; still < 5; time.Sleep(200 * time.Millisecond) {
			tree = processTree(cmd.Process.Pid)
			if len(tree) == last {
				still++
			} else {
				last, still = len(tree), 0
			}
		}
		procs += float64(len(tree))
		for _, pid := range tree {
			pss += float64(pssKiB(pid)) / 1024
		}
		cs.Close()
		_ = cmd.Wait()
	}
	b.ReportMetric(procs/float64(b.N), "procs")
	b.ReportMetric(pss/float64(b.N), "pss-MiB")
}

// processTree is root and every process below it (reparented orphans aside), from /proc/PID/stat.
func processTree(root int) []int {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if ppid, state, ok := statFields(pid); ok && state != "Z" {
				parent[pid] = ppid
			}
		}
	}
	tree := []int{root}
	for grew := true; grew; {
		grew = false
		for pid, ppid := range parent {
			if ppid != 0 && slices.Contains(tree, ppid) && !slices.Contains(tree, pid) {
				tree, grew = append(tree, pid), true
			}
		}
	}
	return tree
}

// pssKiB is a process's proportional set size, in KiB (0 when it is gone).
func pssKiB(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
