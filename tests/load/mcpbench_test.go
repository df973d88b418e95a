//go:build linux

package load

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The benchmark command of docs/BENCHMARKS.md (cmd/mcpbench) runs, briefly, over a real filesystem server and
// prints every row goalbox's figures and the floors make, with results.json and chart.svg beside them; the anchor's
// rows need npm and are scripts/bench.sh's. It guards the command against rot: its figures are not checked.
func TestMCPBenchRuns(t *testing.T) {
	dir := t.TempDir()
	fsBin, _ := binaries(t, dir)
	bench := buildMCPBench(t, dir)
	outDir := filepath.Join(dir, "out")
	out, err := exec.Command(bench, "-fs", fsBin, "-rounds", "1", "-calls", "60", "-http-calls", "80", "-http-callers", "2", "-out", outDir).CombinedOutput()
	if err != nil {
		t.Fatalf("mcpbench: %v\n%s", err, out)
	}
	for _, row := range []string{
		"| goalbox | read 16 KiB | stdio | 1 |", "| goalbox | read 1 B | stdio | 1 |", "| goalbox | write 4 KiB | stdio | 1 |",
		"| pipe floor | read 16 KiB | stdio | 1 |", "| goalbox | read 16 KiB | HTTP | 2 |",
		"| kernel alone | write 4 KiB | syscalls | 1 |", "| kernel alone | read 16 KiB | syscalls | 1 |",
		"the pipe floor (a process that only answers with goalbox's reply)",
	} {
		if !strings.Contains(string(out), row) {
			t.Errorf("mcpbench printed no %q:\n%s", row, out)
		}
	}
	var results struct {
		Figures []struct {
			Server    string  `json:"server"`
			CallsPerS float64 `json:"calls_per_s"`
		} `json:"figures"`
	}
	b, err := os.ReadFile(filepath.Join(outDir, "results.json"))
	if err != nil || json.Unmarshal(b, &results) != nil || len(results.Figures) != 7 {
		t.Fatalf("results.json: %v, %d figures (want 7):\n%s", err, len(results.Figures), b)
	}
	for _, f := range results.Figures {
		if f.CallsPerS <= 0 {
			t.Errorf("%s: %v calls/s", f.Server, f.CallsPerS)
		}
	}
	if svg, err := os.ReadFile(filepath.Join(outDir, "chart.svg")); err != nil || !strings.Contains(string(svg), "pipe floor") {
		t.Errorf("chart.svg: %v, %.200s", err, svg)
	}
}

// TestMCPBenchVariant: -variant measures a second configuration of goalbox's server beside it (here the SDK's own
// encoder, GOALBOX_ENCODE_ONCE=0, as docs/BENCHMARKS.md's decision on encoding results once is measured) and prints
// its rows and its ratios. Its figures are not checked.
func TestMCPBenchVariant(t *testing.T) {
	dir := t.TempDir()
	fsBin, _ := binaries(t, dir)
	bench := buildMCPBench(t, dir)
	wrapper := filepath.Join(dir, "fs-sdk-encoder")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nGOALBOX_ENCODE_ONCE=0 exec "+fsBin+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bench, "-fs", fsBin, "-variant", "SDK encoder="+wrapper, "-rounds", "1", "-calls", "60",
		"-http-calls", "80", "-http-callers", "2", "-out", filepath.Join(dir, "out")).CombinedOutput()
	if err != nil {
		t.Fatalf("mcpbench -variant: %v\n%s", err, out)
	}
	for _, row := range []string{"| SDK encoder | read 16 KiB | stdio | 1 |", "| SDK encoder | read 16 KiB | HTTP | 2 |",
		"goalbox / SDK encoder, read 16 KiB over stdio:", "goalbox / SDK encoder, read 16 KiB over HTTP:"} {
		if !strings.Contains(string(out), row) {
			t.Errorf("mcpbench -variant printed no %q:\n%s", row, out)
		}
	}
	if out, err := exec.Command(bench, "-fs", fsBin, "-variant", "goalbox="+wrapper).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "want NAME=BIN, NAME not goalbox") {
		t.Errorf("-variant goalbox=...: %v %s", err, out)
	}
}

// buildMCPBench builds the benchmark command into dir.
func buildMCPBench(t *testing.T, dir string) string {
	t.Helper()
	bench := filepath.Join(dir, "mcpbench")
	build := exec.Command("go", "build", "-o", bench, "./tests/load/cmd/mcpbench")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build mcpbench: %v\n%s", err, out)
	}
	return bench
}
