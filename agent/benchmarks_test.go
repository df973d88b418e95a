package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/bench"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/pkg/envflag"

	"github.com/goalbox/goalbox/agent/bench/benchtest"
)

// The benchmark modes as a user runs them: the whole command over real exercises, with the scripted model.

type cmdRun struct {
	code           int
	stdout, stderr string
}

func runCmd(t *testing.T, model *looptest.Server, args ...string) cmdRun {
	t.Helper()
	environ := map[string]string{"OPENAI_API_KEY": "sk-test"}
	if model != nil {
		environ["OPENAI_BASE_URL"] = model.BaseURL
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, environ, strings.NewReader(""), &stdout, &stderr)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	return cmdRun{code, stdout.String(), stderr.String()}
}

func TestBenchmarksCommand(t *testing.T) {
	dir := benchtest.Dir(t)
	exDir := filepath.Join(dir, "python", "exercises", "practice", "proverb")
	example, err := os.ReadFile(filepath.Join(exDir, ".meta", "example.py"))
	if err != nil {
		t.Fatal(err)
	}
	model := looptest.New(t, looptest.Step{Calls: []looptest.Call{write("proverb/proverb.py", string(example))}}, looptest.Step{Content: "Done."})
	results := filepath.Join(t.TempDir(), "results")
	args := []string{"-benchmarks", "-benchmarks-dir", dir, "-languages", "python", "-keywords", "proverb", "-results", results,
		"-model", "scripted", "-max-turns", "5", "-timeout", "2m"}

	r := runCmd(t, model, args...)
	if r.code != exitMet || !strings.Contains(r.stdout, "python") || !strings.Contains(r.stderr, "bench 1/1  passed 1/1 (100.0%)") {
		t.Fatalf("want exit 0, a summary table and a progress line")
	}
	var sum bench.Summary
	data, err := os.ReadFile(filepath.Join(results, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.PassRate1 != 100 || sum.TotalTests != 1 || sum.Model != "scripted" {
		t.Errorf("summary.json: %+v", sum)
	}
	var info bench.RunInfo
	data, _ = os.ReadFile(filepath.Join(results, "run.json"))
	if err := json.Unmarshal(data, &info); err != nil || info.BenchmarkCommit == "" || info.Tries != 2 || info.Limits.MaxTurns != 5 {
		t.Errorf("run.json: %+v, %v", info, err)
	}

	// The same folder again: refused without -resume (exit 2), nothing to do with it (exit 0, no model call).
	before := len(model.Requests())
	if r := runCmd(t, model, args...); r.code != exitError || !strings.Contains(r.stderr, "-resume") {
		t.Errorf("a second run into the same results folder: exit %d", r.code)
	}
	if r := runCmd(t, model, append(args, "-resume")...); r.code != exitMet || !strings.Contains(r.stderr, "resumed python/proverb") {
		t.Errorf("resume: exit %d", r.code)
	}
	if n := len(model.Requests()); n != before {
		t.Errorf("the resume called the model %d times for a finished exercise", n-before)
	}
}

// A model server that is not there is an infrastructure error: exit 2, the exercise recorded as an error, and the
// run stops after a few such exercises instead of going through all of them.
func TestBenchmarksModelDownExits2(t *testing.T) {
	dir := benchtest.Dir(t)
	results := filepath.Join(t.TempDir(), "results")
	environ := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-benchmarks", "-benchmarks-dir", dir, "-languages", "python", "-results", results,
		"-retries", "0", "-tries", "1"}, environ, strings.NewReader(""), &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != exitError || !strings.Contains(stderr.String(), "infrastructure error") {
		t.Fatalf("exit %d", code)
	}
	files, _ := filepath.Glob(filepath.Join(results, "results", "python", "*.json"))
	if len(files) < 3 || len(files) > 4 { // 3 in a row stop it; one more may have been under way
		t.Errorf("%d result files: the run should stop after 3 failures in a row", len(files))
	}
}

func TestSelfTestCommand(t *testing.T) {
	dir := benchtest.Dir(t)
	out := filepath.Join(t.TempDir(), "st")
	r := runCmd(t, nil, "-selftest", "-benchmarks-dir", dir, "-languages", "python,go", "-keywords", "proverb,bottle-song", "-results", out)
	// Keywords match in every selected language: go/bottle-song, python/bottle-song, python/proverb.
	if r.code != exitMet || !strings.Contains(r.stdout, "ref-pass") || !strings.Contains(r.stderr, "selftest 3/3") {
		t.Fatalf("exit %d", r.code)
	}
	var results []bench.SelfTestResult
	data, err := os.ReadFile(filepath.Join(out, "selftest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &results); err != nil || len(results) != 3 || results[0].Status != bench.SelfOK || results[1].Status != bench.SelfOK || results[2].Status != bench.SelfOK {
		t.Errorf("selftest.json: %+v %v", results, err)
	}
}

func TestBenchmarkOptions(t *testing.T) {
	o, err := parseBenchmarkOptions([]string{"-benchmarks", "-languages", "go,python", "-tries", "3", "-seed", "7"},
		map[string]string{"GOALBOX_THREADS": "2", "GOALBOX_TRIES": "5", "GOALBOX_GRADE_TIMEOUT": "90s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Benchmarks || o.Tries != 3 || o.Threads != 2 || o.Seed != 7 || o.GradeTimeout != 90*time.Second || strings.Join(envflag.SplitList(o.Languages), "|") != "go|python" {
		t.Errorf("options = %+v", o)
	}
	if o, err = parseBenchmarkOptions([]string{"-benchmarks"}, nil, io.Discard); err != nil || o.Tries != 2 || o.Threads != 1 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	if _, err := parseGoalOptions(nil, nil, io.Discard); err == nil {
		t.Error("no error without a goal (the goal mode still needs one)")
	}
}

func TestBenchmarkConfigurationErrorsExit2(t *testing.T) {
	dir := benchtest.Dir(t)
	model := looptest.New(t)
	badPool := filepath.Join(t.TempDir(), "pool.txt")
	if err := os.WriteFile(badPool, []byte("# one field\nhttp://127.0.0.1:1/mcp\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-selftest", "-benchmarks-dir", dir, "-sandbox-pool", badPool}, "pool.txt:2: 1 fields; each line is FS_URL EXEC_URL"},
		{[]string{"-benchmarks", "-benchmarks-dir", dir, "-sandbox-pool", filepath.Join(dir, "no-pool.txt")}, "-sandbox-pool: open"},
		{[]string{"-goal", "x", "-sandbox-pool", badPool}, "-sandbox-pool belongs to -benchmarks and -selftest"},
		{[]string{"-benchmarks", "-goal", "x"}, "exclude each other"},
		{[]string{"-benchmarks", "-selftest"}, "not both"},
		{[]string{"-benchmarks", "-tries", "0"}, "-tries must be 1 or more"},
		{[]string{"-benchmarks", "-threads", "0"}, "-threads must be 1 or more"},
		{[]string{"-benchmarks", "-resume"}, "-resume needs -results"},
		{[]string{"-benchmarks", "-verify", "true"}, "goal mode"},
		{[]string{"-benchmarks", "-fs-url", "http://127.0.0.1:1/mcp", "-exec-url", "http://127.0.0.1:1/mcp"}, "-fs-url"},
		{[]string{"-benchmarks", "-benchmarks-dir", dir, "-languages", "cobol"}, "allowed: cpp, go, java, javascript, python, rust"},
		{[]string{"-benchmarks", "-benchmarks-dir", dir, "-keywords", "no-such-exercise"}, "no exercise matches"},
		{[]string{"-benchmarks", "-benchmarks-dir", filepath.Join(dir, "nowhere")}, "is not a folder"},
		{[]string{"-selftest", "-benchmarks-dir", t.TempDir()}, "polyglot-benchmark checkout"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			args := c.args
			if !strings.Contains(c.want, "-results") {
				args = append([]string{"-results", t.TempDir()}, c.args...)
			}
			var stderr bytes.Buffer
			code := run(context.Background(), args, map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": model.BaseURL}, strings.NewReader(""), io.Discard, &stderr)
			if code != exitError || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), c.want)
			}
		})
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("a configuration error reached the model (%d requests)", n)
	}
}

// Ctrl-C during an exercise: exit 2 with a hint to resume, and no result for the exercise under way, so a resume
// runs it again.
func TestBenchmarksInterrupted(t *testing.T) {
	dir := benchtest.Dir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	model := looptest.New(t, looptest.Step{Delay: time.Minute, Check: func(testing.TB, looptest.Request) { cancel() }})
	results := filepath.Join(t.TempDir(), "results")
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"-benchmarks", "-benchmarks-dir", dir, "-languages", "python", "-keywords", "proverb", "-results", results},
		map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": model.BaseURL}, strings.NewReader(""), &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != exitError || !strings.Contains(stderr.String(), "interrupted after 0 of 1 exercises; continue with -resume") {
		t.Errorf("exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(results, "results", "python", "proverb.json")); err == nil {
		t.Error("an interrupted exercise has a result file")
	}
}

func TestRedactArgs(t *testing.T) {
	got := strings.Join(redactArgs([]string{"-benchmarks", "-token", "s3cret", "--token=s3cret", "-model", "m"}), " ")
	if want := "-benchmarks -token REDACTED --token=REDACTED -model m"; got != want {
		t.Errorf("redactArgs = %q, want %q", got, want)
	}
}
