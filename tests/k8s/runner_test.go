package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The slice of the Polyglot exercises the runner grades on the node: two exercises in Python and two in
// JavaScript, the selftest's reference solutions (must pass) and stubs (must fail), no model. Not Go or C++: a fresh
// Pod's build cache is empty, and its first test compiles the toolchain's testing packages, which took past the
// grader's 3 minutes on this 2-core machine under the other tests' load (the local backend's cache is warm, so the
// verdicts would differ by the load, not by the sandbox).
const (
	runnerLanguages = "python,javascript"
	runnerKeywords  = "pig-latin,transpose"
)

// benchmarkDir is the polyglot-benchmark checkout: $GOALBOX_BENCHMARK_DIR, else shared/polyglot-benchmark beside the
// repository, as CI lays it out (agent/bench/benchtest finds it the same way; this module imports nothing of the
// project's).
func benchmarkDir(t *testing.T) string {
	for _, d := range []string{os.Getenv("GOALBOX_BENCHMARK_DIR"), filepath.Join(repo, "..", "shared", "polyglot-benchmark")} {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "python", "exercises", "practice")); err == nil {
			abs, err := filepath.Abs(d)
			if err != nil {
				t.Fatal(err)
			}
			return abs
		}
	}
	msg := "polyglot-benchmark not found: set GOALBOX_BENCHMARK_DIR, or put a checkout at ../shared/polyglot-benchmark beside the repository"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// agentBinary builds the runner (./agent) once for the test.
func agentBinary(t *testing.T) string {
	out := filepath.Join(t.TempDir(), "agent")
	cmd := exec.Command("go", "build", "-o", out, "./agent")
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./agent: %v\n%s", err, b)
	}
	return out
}

// selfTestRun is one run of the runner's selftest: its exit code, its standard error, and what it decided.
type selfTestRun struct {
	code    int
	stderr  string
	results []selfTestResult
}

// selfTestResult is the part of a line of the runner's selftest.json (agent/bench.SelfTestResult) a verdict is.
type selfTestResult struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Sandbox string `json:"sandbox"`
	Ref     struct {
		Passed     bool   `json:"passed"`
		Ungradable string `json:"ungradable"`
	} `json:"reference"`
	Stub struct {
		Passed     bool   `json:"passed"`
		Ungradable string `json:"ungradable"`
	} `json:"stub"`
}

func (r selfTestResult) verdict() string {
	return fmt.Sprintf("%s %s %q ref=%v/%q stub=%v/%q", r.ID, r.Status, r.Reason, r.Ref.Passed, r.Ref.Ungradable, r.Stub.Passed, r.Stub.Ungradable)
}

func verdictsOf(rs []selfTestResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.verdict())
	}
	return out
}

// selfTest runs the runner's selftest over the exercises of languages with runnerKeywords, with extra flags (a
// pool), and reads its results.
func selfTest(t *testing.T, agent, benchmarks, languages string, extra ...string) selfTestRun {
	t.Helper()
	results := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	args := append([]string{"-selftest", "-benchmarks-dir", benchmarks, "-languages", languages, "-keywords", runnerKeywords, "-results", results}, extra...)
	cmd := exec.CommandContext(ctx, agent, args...)
	// The tokens are the pool file's, never the environment's.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOALBOX_FS_TOKEN=") || strings.HasPrefix(kv, "GOALBOX_EXEC_TOKEN=")
	})
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	run := selfTestRun{code: cmd.ProcessState.ExitCode(), stderr: stderr.String()}
	if ctx.Err() != nil {
		t.Fatalf("agent %s: %v\n%s", strings.Join(args, " "), ctx.Err(), run.stderr)
	}
	_ = err // the exit code says it
	data, err := os.ReadFile(filepath.Join(results, "selftest.json"))
	if err != nil {
		t.Fatalf("agent %s: exit %d, no results: %v\n%s", strings.Join(args, " "), run.code, err, run.stderr)
	}
	if err := json.Unmarshal(data, &run.results); err != nil {
		t.Fatalf("selftest.json: %v", err)
	}
	return run
}

// sandboxPod is a sandbox Pod as the runner reaches it from outside the node: by its IP (no cluster DNS here),
// with its own tokens.
type sandboxPod struct {
	name, ip, fsToken, execToken string
}

// poolName is how the runner names the Pod's sandbox: its filesystem server's host:port.
func (p sandboxPod) poolName() string { return p.ip + ":7101" }

// writePoolFile writes the runner's pool file for the Pods, each line with its Pod's tokens.
func writePoolFile(t *testing.T, pods []sandboxPod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "http://%s:7101/mcp http://%s:7102/mcp %s %s\n", p.ip, p.ip, p.fsToken, p.execToken)
	}
	file := filepath.Join(t.TempDir(), "pool.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// gradeOnPods is the runner on the cluster: the selftest over the sandbox Pods gives every exercise of the slice
// the verdict the local backend gives it, with both Pods grading; then a Pod deleted in the middle of an exercise
// (as a drain or a scale-down deletes it: gracefully) costs that exercise a retry on the other Pod, not the run.
func gradeOnPods(t *testing.T, ctl nodeCtl, pods []sandboxPod) {
	benchmarks := benchmarkDir(t)
	agent := agentBinary(t)

	start := time.Now()
	local := selfTest(t, agent, benchmarks, runnerLanguages)
	if local.code != 0 {
		t.Fatalf("the local selftest: exit %d\n%s", local.code, local.stderr)
	}
	want := verdictsOf(local.results)
	if len(want) < 4 {
		t.Fatalf("want at least 4 exercises in the slice, it has %d", len(want))
	}
	t.Logf("the local backend graded %d exercises in %v", len(want), time.Since(start).Round(time.Second))

	pool := writePoolFile(t, pods)
	start = time.Now()
	run := selfTest(t, agent, benchmarks, runnerLanguages, "-sandbox-pool", pool)
	if run.code != 0 {
		t.Fatalf("the selftest over the Pods: exit %d\n%s", run.code, run.stderr)
	}
	if got := verdictsOf(run.results); !slices.Equal(got, want) {
		t.Errorf("verdicts over the Pods differ from the local ones:\nPods:\n%s\nlocal:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	used := map[string]int{}
	for _, r := range run.results {
		used[r.Sandbox]++
	}
	for _, p := range pods {
		if used[p.poolName()] == 0 {
			t.Errorf("%s (%s) graded nothing: %v", p.name, p.poolName(), used)
		}
	}
	t.Logf("%d exercises graded over %d Pods in %v, verdicts as on the local backend: %v", len(run.results), len(pods), time.Since(start).Round(time.Second), used)

	// The drained run grades the Python pair alone (the quickest to grade; one exercise for each Pod to start on),
	// to the same verdicts as the local backend gave them above.
	var wantPython []string
	for _, r := range local.results {
		if strings.HasPrefix(r.ID, "python/") {
			wantPython = append(wantPython, r.verdict())
		}
	}
	// The victim's workspace still holds the last exercise: empty it, so that the next file in it is this run's.
	victim := pods[1]
	ctl.must(t, nil, "-n", "goalbox", "exec", victim.name, "-c", "executor", "--", "find", "/workspace", "-mindepth", "1", "-delete")
	deleted := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer close(deleted)
		// One exec that looks inside the Pod every 50 ms and returns at the first file of the run's exercise, then the
		// delete. A kubectl exec per look (a kubectl process, the API server, the kubelet, the runtime) takes up to
		// seconds on a loaded node, time enough for the Pod to grade a Python exercise whole: the Pod was then
		// deleted with nothing left to cut, and the run ended without a drain.
		for ctx.Err() == nil {
			look := exec.CommandContext(ctx, filepath.Join(ctl.bin, "kubectl"), "--kubeconfig", ctl.kc, "-n", "goalbox", "exec", victim.name,
				"-c", "executor", "--", "timeout", "900", "sh", "-c", `until [ -n "$(ls -A /workspace)" ]; do sleep 0.05; done`)
			look.Dir = repo
			if err := look.Run(); err == nil && ctx.Err() == nil {
				out, err := ctl.run(nil, "-n", "goalbox", "delete", "pod", victim.name, "--wait=false")
				deleted <- fmt.Sprintf("deleted with an exercise in its workspace: %v %s", err, strings.TrimSpace(out))
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	start = time.Now()
	run = selfTest(t, agent, benchmarks, "python", "-sandbox-pool", pool)
	cancel()
	how, ok := <-deleted
	if !ok {
		t.Fatal("the second Pod was never given an exercise")
	}
	t.Logf("%s: %s", victim.name, how)
	if run.code != 0 || !strings.Contains(run.stderr, "sandbox "+victim.poolName()+" taken out of the pool (1 left)") {
		t.Fatalf("the selftest with a Pod deleted: exit %d, or no word of the drained sandbox\n%s", run.code, run.stderr)
	}
	if got := verdictsOf(run.results); len(got) < 2 || !slices.Equal(got, wantPython) {
		t.Errorf("verdicts with a Pod deleted differ from the local ones:\nPods:\n%s\nlocal:\n%s", strings.Join(got, "\n"), strings.Join(wantPython, "\n"))
	}
	for _, r := range run.results {
		if r.Sandbox != pods[0].poolName() {
			t.Errorf("%s graded by %q, want the Pod left, %s", r.ID, r.Sandbox, pods[0].poolName())
		}
	}
	t.Logf("%d exercises graded in %v, %s drained, every verdict as on the local backend", len(run.results), time.Since(start).Round(time.Second), victim.name)
}
