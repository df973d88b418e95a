// Command mcpbench measures goalbox's filesystem server beside the official one (@modelcontextprotocol/server-filesystem,
// "the anchor") in one run, with a lean raw JSON-RPC client whose own cost per call is a few microseconds: 16 KiB
// reads over stdio with one caller and over streamable HTTP with several, 1-byte reads over stdio (the floor under
// any call), 4 KiB writes over stdio beside what the kernel alone takes for the same durable write, and the server's
// CPU time per call from /proc. It prints the figures as a table with ratios and the targets of docs/BENCHMARKS.md, and writes
// results.json and chart.svg. scripts/bench.sh builds the server, installs the anchor and runs it; see
// docs/BENCHMARKS.md.
//
//	mcpbench -fs ./filesystem [-anchor .../mcp-server-filesystem] [-agent agent-bench.txt] [-out DIR]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

type options struct {
	fs, anchor, agent, out string
	calls, httpCalls       int
	httpCallers, rounds    int
}

func main() {
	if file := os.Getenv(echoEnv); file != "" {
		if err := serveEcho(file); err != nil {
			fmt.Fprintln(os.Stderr, "mcpbench (pipe floor):", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.fs, "fs", "", "goalbox filesystem server binary (required)")
	flag.StringVar(&o.anchor, "anchor", "", "the official server's command (mcp-server-filesystem); empty skips its rows")
	flag.StringVar(&o.agent, "agent", "", "output of go test -bench in agent/sandbox, whose figures join the table")
	flag.StringVar(&o.out, "out", ".", "folder for results.json and chart.svg")
	flag.IntVar(&o.calls, "calls", 3000, "calls per stdio figure")
	flag.IntVar(&o.httpCalls, "http-calls", 16000, "calls per HTTP figure")
	flag.IntVar(&o.httpCallers, "http-callers", 8, "callers over HTTP, each with a session and a connection of its own")
	flag.IntVar(&o.rounds, "rounds", 3, "times each stdio figure is taken, servers alternating; the median round is kept")
	flag.Parse()
	if o.fs == "" {
		fmt.Fprintln(os.Stderr, "mcpbench: -fs is required: the path of a built goalbox filesystem server")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ws, err := os.MkdirTemp("", "mcpbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	content := sourceText(16 << 10)
	if err := os.WriteFile(filepath.Join(ws, "read16k.txt"), []byte(content), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ws, "read1b.txt"), []byte("x"), 0o644); err != nil {
		return err
	}
	write4k := sourceText(4 << 10)

	servers := []server{goalbox(o.fs, ws)}
	if o.anchor != "" {
		servers = append(servers, anchor(o.anchor, ws))
	}
	var figs []figure
	for _, w := range []workload{readWorkload(), tinyReadWorkload(), writeWorkload(write4k)} {
		for _, s := range servers {
			var rounds []figure
			for r := range o.rounds {
				f, err := s.stdio(w, o.calls)
				if err != nil {
					return fmt.Errorf("%s, %s over stdio (round %d): %w", s.name, w.name, r+1, err)
				}
				rounds = append(rounds, f)
			}
			figs = append(figs, median(rounds))
		}
	}
	pf, err := pipeFloor(servers[0], readWorkload(), o.calls, ws)
	if err != nil {
		return fmt.Errorf("the pipe floor: %w", err)
	}
	figs = append(figs, pf)
	f, err := servers[0].http(readWorkload(), o.httpCalls, o.httpCallers)
	if err != nil {
		return fmt.Errorf("goalbox, read over HTTP: %w", err)
	}
	figs = append(figs, f)
	floor, err := durableWriteFloor(ws, write4k, o.calls)
	if err != nil {
		return err
	}
	rf, err := readFloor(ws, o.calls)
	if err != nil {
		return err
	}
	figs = append(figs, floor, rf)
	var agent []agentFigure
	if o.agent != "" {
		if agent, err = readAgentBench(o.agent); err != nil {
			return err
		}
	}

	rep := report{Machine: machine(), Figures: figs, Agent: agent}
	fmt.Print(rep.markdown())
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(o.out, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "chart.svg"), []byte(chart(figs)), 0o644)
}

// median is the round with the median calls/s (the load of a shared machine moves single rounds a lot).
func median(rounds []figure) figure {
	slices.SortFunc(rounds, func(a, b figure) int {
		switch {
		case a.CallsPerS < b.CallsPerS:
			return -1
		case a.CallsPerS > b.CallsPerS:
			return 1
		}
		return 0
	})
	m := rounds[len(rounds)/2]
	m.Note = strings.TrimSpace(fmt.Sprintf("%s median of %d rounds", m.Note, len(rounds)))
	return m
}

// sourceText is n bytes of Go-like source text: lines of varying length with tabs and quotes, which JSON must
// escape (a read's text is escaped twice: once in structuredContent's JSON, again as the text content holding it).
func sourceText(n int) string {
	lines := []string{
		"func (s *server) read(ctx context.Context, in protocol.ReadFileInput) (readOutput, error) {",
		"\tif in.Path == \"\" {",
		"\t\treturn out, errors.New(\"path is required: give a file path relative to the workspace\")",
		"\t}",
		"\t// A comment that says why, at a width a reader can take in at a glance.",
		"\tfor i, line := range strings.Split(text, \"\\n\") {",
		"\t\tfmt.Fprintf(w, \"%6d\\t%s\\n\", i+1, line)",
		"",
	}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
	}
	return b.String()[:n-1] + "\n"
}
