package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/bench"
	"github.com/goalbox/goalbox/agent/bench/benchtest"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/agent/sandbox/sandboxtest"
)

// The runner over a pool of three real sandbox stacks: each a filesystem server and an executor on loopback ports
// of their own, over a workspace of their own, reached over HTTP with bearer tokens exactly as compose or
// Kubernetes stacks are. Go and Python exercises, a few of each, so it takes a couple of minutes.

const poolKeywords = "proverb,bottle-song,pig-latin,transpose"

// startPool starts three stacks and writes a pool file for them: the first two take their token from
// GOALBOX_FS_TOKEN/GOALBOX_EXEC_TOKEN (returned as environ), the third has its own on its line.
func startPool(t *testing.T) (file string, stacks []*sandboxtest.Stack, environ map[string]string) {
	t.Helper()
	shared, own := "pool-"+randomHex(t, 8), "own-"+randomHex(t, 8)
	var lines []string
	lines = append(lines, "# three sandbox stacks on loopback", "")
	for i := range 3 {
		tok := shared
		if i == 2 {
			tok = own
		}
		st := sandboxtest.Start(t, t.TempDir(), tok)
		stacks = append(stacks, st)
		line := st.FS.URL + "  " + st.Exec.URL
		if i == 2 {
			line += "\t" + own + " " + own
		}
		lines = append(lines, line)
	}
	file = filepath.Join(t.TempDir(), "pool.txt")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, stacks, map[string]string{"GOALBOX_FS_TOKEN": shared, "GOALBOX_EXEC_TOKEN": shared}
}

// stackName is how results name st: its filesystem server's host:port.
func stackName(st *sandboxtest.Stack) string {
	return strings.TrimSuffix(strings.TrimPrefix(st.FS.URL, "http://"), "/mcp")
}

func runCmdEnv(t *testing.T, ctx context.Context, environ map[string]string, model *looptest.Server, args ...string) cmdRun {
	t.Helper()
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	for k, v := range environ {
		env[k] = v
	}
	if model != nil {
		env["OPENAI_BASE_URL"] = model.BaseURL
	}
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, env, strings.NewReader(""), &stdout, &stderr)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	return cmdRun{code, stdout.String(), stderr.String()}
}

func readSelfTest(t *testing.T, dir string) []bench.SelfTestResult {
	t.Helper()
	var rs []bench.SelfTestResult
	data, err := os.ReadFile(filepath.Join(dir, "selftest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// verdicts is what a selftest decided about each exercise, without timings, outputs or sandboxes.
func verdicts(rs []bench.SelfTestResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %s %q ref=%v/%q stub=%v/%q", r.ID, r.Status, r.Reason, r.Ref.Passed, r.Ref.Ungradable, r.Stub.Passed, r.Stub.Ungradable))
	}
	return out
}

func TestSandboxPoolSelfTest(t *testing.T) {
	dir := benchtest.Dir(t)
	local := filepath.Join(t.TempDir(), "local")
	r := runCmd(t, nil, "-selftest", "-benchmarks-dir", dir, "-languages", "go,python", "-keywords", poolKeywords, "-results", local)
	if r.code != exitMet {
		t.Fatalf("local selftest: exit %d", r.code)
	}
	want := verdicts(readSelfTest(t, local))
	if len(want) < 6 {
		t.Fatalf("want at least 6 exercises, the selection has %d", len(want))
	}

	file, stacks, environ := startPool(t)
	t.Run("verdicts", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "pool")
		r := runCmdEnv(t, context.Background(), environ, nil, "-selftest", "-sandbox-pool", file, "-benchmarks-dir", dir,
			"-languages", "go,python", "-keywords", poolKeywords, "-results", out)
		if r.code != exitMet || !strings.Contains(r.stderr, "3 threads, a pool of 3 sandboxes") {
			t.Fatalf("pool selftest: exit %d, or -threads did not default to the pool's size", r.code)
		}
		got := readSelfTest(t, out)
		if g := verdicts(got); !slices.Equal(g, want) {
			t.Errorf("verdicts over the pool differ from the local ones:\npool:\n%s\nlocal:\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
		}
		used := map[string]int{}
		for _, res := range got {
			used[res.Sandbox]++
		}
		for _, st := range stacks {
			if used[stackName(st)] == 0 {
				t.Errorf("stack %s graded nothing: %v", stackName(st), used)
			}
		}
	})

	// The second stack goes down as soon as an exercise lands in its workspace: it is drained, and every
	// exercise still gets the local verdict, from the two others.
	t.Run("one stack killed", func(t *testing.T) {
		victim := stacks[1]
		// Empty its workspace of the last run's exercise, so that the next file in it is this run's.
		entries, err := os.ReadDir(victim.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(victim.Workspace, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		killed := make(chan struct{})
		go func() {
			defer close(killed)
			for {
				if entries, _ := os.ReadDir(victim.Workspace); len(entries) > 0 {
					victim.Kill()
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		out := filepath.Join(t.TempDir(), "pool")
		r := runCmdEnv(t, context.Background(), environ, nil, "-selftest", "-sandbox-pool", file, "-benchmarks-dir", dir,
			"-languages", "go,python", "-keywords", poolKeywords, "-results", out)
		select {
		case <-killed:
		default:
			t.Fatal("the second stack was never given an exercise")
		}
		if r.code != exitMet || !strings.Contains(r.stderr, "sandbox "+stackName(victim)+" taken out of the pool (2 left)") {
			t.Fatalf("exit %d, or no word of the drained sandbox", r.code)
		}
		got := readSelfTest(t, out)
		if g := verdicts(got); !slices.Equal(g, want) {
			t.Errorf("verdicts with a stack down differ from the local ones:\npool:\n%s\nlocal:\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
		}
		for _, res := range got {
			if res.Sandbox == stackName(victim) || res.Sandbox == "" {
				t.Errorf("%s graded by %q", res.ID, res.Sandbox)
			}
		}

		// With every stack down the run ends with an error that says so. Of two exercises, one is given up after
		// taking down two sandboxes (so that one exercise cannot empty a pool), the other finds the pool empty.
		for _, st := range stacks {
			st.Kill()
		}
		r = runCmdEnv(t, context.Background(), environ, nil, "-selftest", "-sandbox-pool", file, "-benchmarks-dir", dir,
			"-languages", "python", "-keywords", "proverb,pig-latin", "-results", filepath.Join(t.TempDir(), "none"))
		if r.code != exitError || !strings.Contains(r.stderr, "every sandbox of the pool failed") ||
			!strings.Contains(r.stdout, "given up after 2 sandboxes failed while they ran it") {
			t.Errorf("an empty pool: exit %d", r.code)
		}
	})
}

// oracle answers each exercise's first request with its reference solution written over the solution file, and
// any later request (after the tool results) with "Done.": a perfect model, whatever order the workers ask in.
func oracle(t *testing.T, exs []bench.Exercise) func(looptest.Request) looptest.Step {
	type answer struct{ marker, path, content string }
	var answers []answer
	for _, ex := range exs {
		if len(ex.Solution) != 1 || len(ex.Example) != 1 {
			t.Fatalf("%s: the oracle handles one solution and one example file, not %v and %v", ex.ID(), ex.Solution, ex.Example)
		}
		data, err := os.ReadFile(filepath.Join(ex.Dir, filepath.FromSlash(ex.Example[0])))
		if err != nil {
			t.Fatal(err)
		}
		p := path.Join(ex.Slug, ex.Solution[0])
		answers = append(answers, answer{"`" + p + "`", p, string(data)})
	}
	return func(req looptest.Request) looptest.Step {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return looptest.Step{Content: "Done."}
		}
		goal := req.Messages[1].Text()
		for _, a := range answers {
			if strings.Contains(goal, a.marker) {
				return looptest.Step{Calls: []looptest.Call{write(a.path, a.content)}}
			}
		}
		t.Errorf("the oracle knows no exercise in this goal:\n%s", goal)
		return looptest.Step{Content: "Done."}
	}
}

func TestSandboxPoolBenchmarks(t *testing.T) {
	dir := benchtest.Dir(t)
	exs, err := bench.Discover(dir, bench.Filter{Languages: []string{"go", "python"}, Keywords: strings.Split(poolKeywords, ",")})
	if err != nil {
		t.Fatal(err)
	}
	file, stacks, environ := startPool(t)
	runBench := func(t *testing.T, model *looptest.Server, tries string) bench.Summary {
		t.Helper()
		results := filepath.Join(t.TempDir(), "results")
		r := runCmdEnv(t, context.Background(), environ, model, "-benchmarks", "-sandbox-pool", file, "-benchmarks-dir", dir,
			"-languages", "go,python", "-keywords", poolKeywords, "-results", results, "-model", "scripted", "-tries", tries,
			"-max-turns", "5", "-timeout", "3m")
		if r.code != exitMet {
			t.Fatalf("exit %d", r.code)
		}
		used := map[string]int{}
		for _, ex := range exs {
			res, ok, err := bench.LoadResult(results, ex.ID())
			if err != nil || !ok {
				t.Fatalf("%s: no result: %v", ex.ID(), err)
			}
			used[res.Sandbox]++
		}
		for _, st := range stacks {
			if used[stackName(st)] == 0 {
				t.Errorf("stack %s ran nothing: %v", stackName(st), used)
			}
		}
		var sum bench.Summary
		data, err := os.ReadFile(filepath.Join(results, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &sum); err != nil {
			t.Fatal(err)
		}
		return sum
	}
	t.Run("oracle", func(t *testing.T) {
		model := looptest.New(t)
		model.Respond = oracle(t, exs)
		// Every exercise passes. A first try may only fail by timing out (on a loaded machine a fresh sandbox's cold
		// Go build can outlast the test timeout; the second try then passes): a wrong verdict is not excused.
		s := runBench(t, model, "2")
		failed1 := 0
		for _, l := range s.Languages {
			failed1 += l.Cases - l.Passed1
		}
		if s.PassRate2 != 100 || s.TotalTests != len(exs) || failed1 > s.TestTimeouts {
			t.Errorf("the oracle through the pool: %+v", s)
		}
	})
	t.Run("nothing", func(t *testing.T) {
		model := looptest.New(t)
		model.Repeat = &looptest.Step{Content: "Done."}
		if s := runBench(t, model, "2"); s.PassRate1 != 0 || s.PassRate2 != 0 || s.TotalTests != len(exs) || len(s.Failures) != len(exs) {
			t.Errorf("the do-nothing model through the pool: %+v", s)
		}
	})
}
