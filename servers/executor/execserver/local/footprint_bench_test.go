//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/proctree"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkWorkspaceFootprint is what one workspace keeps running, beside a Docker container in the same run:
//
//   - goalbox: both servers, the executor (local backend) and the filesystem server, built from this tree and
//     started over stdio for one workspace, after one command, with one background process (`sleep 600`) started,
//     once the executor's ready sandboxes are made again;
//   - docker: `docker run -d` of the executor image running `sleep 600` (what the docker backend keeps per
//     workspace at the least), its processes being the container's shim and everything below it.
//
// Each reports the processes of its tree and their proportional set size summed from /proc/PID/smaps_rollup:
//
//	cd servers/executor && go test ./execserver/local -run '^$' -bench WorkspaceFootprint -benchtime 3x -count 1
func BenchmarkWorkspaceFootprint(b *testing.B) {
	bin := b.TempDir()
	root, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil || strings.TrimSpace(string(root)) == "" {
		b.Fatalf("the servers are built from the repository's go.work: %v", err)
	}
	for _, s := range []string{"executor", "filesystem"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, s), "./servers/"+s)
		build.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v %s", s, err, out)
		}
	}
	b.Run("goalbox", func(b *testing.B) {
		footprint(b, func() ([]int, func()) {
			ws, cache := b.TempDir(), b.TempDir()
			var sessions []*mcp.ClientSession
			var cmds []*exec.Cmd
			for _, args := range [][]string{
				{filepath.Join(bin, "executor"), "-stdio", "-workspace", ws, "-backend", "local", "-cache-dir", cache},
				{filepath.Join(bin, "filesystem"), "-stdio", "-workspace", ws},
			} {
				cmd := exec.Command(args[0], args[1:]...)
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "footprint"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
				if err != nil {
					b.Fatal(err)
				}
				sessions, cmds = append(sessions, cs), append(cmds, cmd)
			}
			sandboxtest.MustRun(b, sessions[0], protocol.RunCommandInput{Command: "true"})
			if _, err := sessions[0].CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolStartProcess,
				Arguments: protocol.StartProcessInput{Command: "sleep 600"}}); err != nil {
				b.Fatal(err)
			}
			return append(stillTree(cmds[0].Process.Pid), processTree(cmds[1].Process.Pid)...), func() {
				for i, cs := range sessions {
					cs.Close()
					_ = cmds[i].Wait()
				}
			}
		})
	})
	b.Run("docker", func(b *testing.B) {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			ciskip.Skip(b, "no Docker engine here (/var/run/docker.sock): the container's side of the figure cannot be taken")
		}
		n := 0
		footprint(b, func() ([]int, func()) {
			n++
			name := fmt.Sprintf("goalbox-perf-footprint-%d-%d", os.Getpid(), n)
			if out, err := exec.Command("docker", "run", "-d", "--rm", "--name", name, "--entrypoint", "sleep", footprintImage, "600").CombinedOutput(); err != nil {
				b.Fatalf("docker run: %v %s", err, out)
			}
			remove := func() { _ = exec.Command("docker", "rm", "-f", name).Run() }
			out, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", name).Output()
			if err != nil {
				remove()
				b.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
			if err != nil {
				remove()
				b.Fatal(err)
			}
			shim, _, ok := proctree.Stat(pid) // the container's first process is the shim's child
			if !ok {
				remove()
				b.Fatalf("container process %d is gone", pid)
			}
			return stillTree(shim), remove
		})
	})
}

// footprintImage is the image the Docker side runs: the executor's, as the docker backend does.
const footprintImage = "goalbox/executor:latest"

// footprint reports the mean process count and PSS of the trees one starts, one per iteration, each measured
// before its stop is called.
func footprint(b *testing.B, one func() (tree []int, stop func())) {
	var procs, pss float64
	n := 0
	for b.Loop() {
		n++
		tree, stop := one()
		procs += float64(len(tree))
		for _, pid := range tree {
			pss += float64(pssKiB(pid)) / 1024
		}
		stop()
	}
	b.ReportMetric(procs/float64(n), "procs")
	b.ReportMetric(pss/float64(n), "pss-MiB")
}

// stillTree is processTree(root) once its count has held still for a second: pools refill in the background.
func stillTree(root int) []int {
	var tree []int
	for last, still := -1, 0; still < 5; time.Sleep(200 * time.Millisecond) {
		tree = processTree(root)
		if len(tree) == last {
			still++
		} else {
			last, still = len(tree), 0
		}
	}
	return tree
}

// processTree is root and every process below it (reparented orphans aside), from /proc/PID/stat.
func processTree(root int) []int {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if ppid, state, ok := proctree.Stat(pid); ok && state != "Z" {
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
