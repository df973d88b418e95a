//go:build linux

package local

// `go mod download` of a real module graph into a module cache inside the workspace (so every file it writes passes
// the command's layer and the guard), from a static GOPROXY of the benchmark's own: the GOPROXY file layout
// (cache/download) of modules already in this machine's module cache, copied into the workspace and read through
// file://. Bare on the same filesystem beside through MCP, in one run:
//
//	cd servers/executor && go test ./execserver/local -run '^$' -bench GoModDownload -benchtime 3x -count 1

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// goModGraph is the module graph downloaded: the MCP SDK, x/sys and two more, with what they require (some 900
// files, 44 MB in the module cache).
const goModGraph = `module example.com/bench

go 1.26

require (
	github.com/modelcontextprotocol/go-sdk v1.8.0
	golang.org/x/sys v0.49.0
	github.com/segmentio/encoding v0.5.4
	github.com/caarlos0/env/v11 v11.4.2
)
`

// goModDownload is the command, run in the workspace: a fresh module folder n with its own module cache.
const goModDownload = `W=$PWD && mkdir m%[1]d && cd m%[1]d && cp ../go.mod.bench go.mod && ` +
	`GOPROXY=file://$W/proxy GOSUMDB=off GOFLAGS=-modcacherw GOTOOLCHAIN=local GOMODCACHE=$W/m%[1]d/mod go mod download && ` +
	`test -f $W/m%[1]d/mod/golang.org/x/sys@v0.49.0/unix/syscall_linux.go`

func BenchmarkGoModDownload(b *testing.B) {
	proxy := goProxyOf(b)
	b.Run("bare", func(b *testing.B) {
		ws := goModWorkspace(b, b.TempDir(), proxy)
		goModRuns(b, ws, func(command string) {
			cmd := exec.Command("sh", "-c", command)
			cmd.Dir = ws
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		})
	})
	b.Run("mcp", func(b *testing.B) {
		be, ws := newLocalTestBackend(b, nil)
		goModWorkspace(b, ws, proxy)
		srv := sandboxtest.StartServer(b, be, ws, execserver.Config{}, nil)
		goModRuns(b, ws, func(command string) {
			out, res := sandboxtest.CallRun(b, context.Background(), srv.Session, protocol.RunCommandInput{Command: command, TimeoutSeconds: 600})
			if res.IsError || out.ExitCode != 0 {
				b.Fatalf("%+v", out)
			}
		})
	})
}

// goProxyOf makes the static GOPROXY: the graph downloaded once, untimed, from this machine's module cache into a
// cache of its own, whose cache/download is then exactly the files a proxy serves for it.
func goProxyOf(b *testing.B) string {
	b.Helper()
	hostCache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goModGraph), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("go", "mod", "download")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+filepath.Join(strings.TrimSpace(string(hostCache)), "cache", "download"),
		"GOSUMDB=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local", "GOMODCACHE="+filepath.Join(dir, "mod"))
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("the graph is not in this machine's module cache (go mod download in the repository's pkg module fills it): %v %s", err, out)
	}
	return filepath.Join(dir, "mod", "cache", "download")
}

// goModWorkspace puts the proxy and the graph's go.mod into the workspace ws.
func goModWorkspace(b *testing.B, ws, proxy string) string {
	b.Helper()
	if out, err := exec.Command("cp", "-a", proxy, filepath.Join(ws, "proxy")).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(ws, "go.mod.bench"), []byte(goModGraph), 0o644); err != nil {
		b.Fatal(err)
	}
	return ws
}

// goModRuns times run of the command once per iteration, each into a fresh folder, removed outside the timer.
func goModRuns(b *testing.B, ws string, run func(command string)) {
	n := 0
	b.ResetTimer()
	for b.Loop() {
		n++
		run(fmt.Sprintf(goModDownload, n))
		b.StopTimer()
		_ = os.RemoveAll(filepath.Join(ws, fmt.Sprint("m", n)))
		b.StartTimer()
	}
}
