package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/agent/openaichat"
	"github.com/goalbox/goalbox/agent/sandbox"
)

// These tests drive the runner with the scripted model over real exercises, the real in-process servers as the
// agent's sandbox and the real executor as the grader's.

// runnerExercises are two Go and two Python exercises with one solution file each, quick to grade.
func runnerExercises(t *testing.T) []Exercise {
	t.Helper()
	dir := benchmarkDir(t)
	var out []Exercise
	for _, id := range []string{"go/bottle-song", "go/pig-latin", "python/pig-latin", "python/proverb"} {
		lang, slug, _ := strings.Cut(id, "/")
		ex, err := LoadExercise(filepath.Join(dir, lang, "exercises", "practice", slug), lang)
		must(t, err)
		out = append(out, ex)
	}
	if len(out) != 4 {
		t.Fatalf("want 4 exercises, found %d", len(out))
	}
	return out
}

// newRunOptions wires a run over exs to a scripted model answering with steps, in a fresh run folder.
func newRunOptions(t *testing.T, exs []Exercise, steps ...looptest.Step) (RunOptions, *looptest.Server) {
	t.Helper()
	srv := looptest.New(t, steps...)
	model, err := openaichat.New(openaichat.Config{Model: "scripted", BaseURL: srv.BaseURL, APIKey: "test", MaxRetries: 0})
	must(t, err)
	g := NewGrader()
	g.Toolchains.CompilerCache = true
	limits := loop.DefaultLimits()
	limits.MaxTurns = 10
	limits.Timeout = 2 * time.Minute
	return RunOptions{
		Exercises: exs, RunDir: t.TempDir(), Workers: 1,
		Model: model, Limits: limits, Grader: g,
		GradeSandbox: inProcessSandbox(g.Toolchains, GraderCacheDir()),
		AgentSandbox: inProcessAgentSandbox(g.Toolchains, t.TempDir(), t.TempDir()),
	}, srv
}

// referenceCalls write ex's reference solution over its solution files, as a model would, through the
// filesystem server. The test reads the pristine source; the model never could.
func referenceCalls(t *testing.T, ex Exercise) []looptest.Call {
	t.Helper()
	targets, err := referenceTargets(ex)
	must(t, err)
	var calls []looptest.Call
	for src, dst := range targets {
		data, err := os.ReadFile(filepath.Join(ex.Dir, filepath.FromSlash(src)))
		must(t, err)
		calls = append(calls, looptest.Call{Name: "sandbox_write_file", Args: looptest.Args(map[string]string{
			"path": path.Join(ex.Slug, dst), "content": string(data)})})
	}
	return calls
}

var done = looptest.Step{Content: "Done."}

func TestRunReferenceSolutionsPass(t *testing.T) {
	exs := runnerExercises(t)
	var steps []looptest.Step
	for _, ex := range exs {
		id := ex.ID()
		sol := path.Join(ex.Slug, ex.Solution[0])
		steps = append(steps, looptest.Step{Calls: referenceCalls(t, ex), Check: func(t testing.TB, req looptest.Request) {
			goal := req.Messages[1].Text()
			if !strings.Contains(goal, "`"+sol+"`") || !strings.Contains(goal, "## Your task") {
				t.Errorf("%s: the goal does not name the solution file %s:\n%s", id, sol, goal)
			}
		}}, done)
	}
	opts, _ := newRunOptions(t, exs, steps...)
	report, err := Run(context.Background(), opts)
	must(t, err)
	s := report.Summary
	if s.PassRate1 != 100 || s.PassRate2 != 100 || s.TotalTests != 4 || s.PercentCasesWellFormed != 100 || len(s.Failures) != 0 {
		t.Errorf("summary: %+v", s)
	}
	if len(s.Languages) != 2 || s.Languages[0].Lang != "go" || s.Languages[0].Passed1 != 2 || s.Languages[1].Passed1 != 2 {
		t.Errorf("language rows: %+v", s.Languages)
	}
	for _, ex := range exs {
		r, ok, err := LoadResult(opts.RunDir, ex.ID())
		must(t, err)
		if !ok || len(r.Tries) != 1 || !r.Tries[0].Passed || r.Tries[0].Turns != 2 || r.Tries[0].StopReason != loop.StopDone ||
			r.Tries[0].PromptTokens != 200 || r.Tries[0].CompletionTokens != 20 {
			t.Errorf("%s: result %+v", ex.ID(), r)
		}
		if _, err := os.Stat(TranscriptPath(opts.RunDir, ex.ID(), 1)); err != nil {
			t.Errorf("%s: no transcript: %v", ex.ID(), err)
		}
		if log, err := os.ReadFile(strings.TrimSuffix(TranscriptPath(opts.RunDir, ex.ID(), 1), ".jsonl") + ".log"); err != nil || !strings.Contains(string(log), "sandbox_write_file") {
			t.Errorf("%s: progress log %q, %v", ex.ID(), log, err)
		}
		ws := filepath.Join(WorkspaceRoot(opts.RunDir, ex), ex.Slug)
		for _, hidden := range hiddenDirs {
			if _, err := os.Stat(filepath.Join(ws, hidden)); err == nil {
				t.Errorf("%s: the workspace has %s", ex.ID(), hidden)
			}
		}
	}
	for _, name := range []string{"summary.json", "summary.txt", "run.json"} {
		if _, err := os.Stat(filepath.Join(opts.RunDir, name)); err != nil {
			t.Error(err)
		}
	}
}

// A model that does nothing fails every exercise on both tries, and the second try is told the first one's
// test output. Two workers: the scripted answers do not depend on the order.
func TestRunNothingFailsAndRetrySeesTestOutput(t *testing.T) {
	exs := runnerExercises(t)
	exs = []Exercise{exs[0], exs[2]} // one go, one python
	opts, srv := newRunOptions(t, exs)
	srv.Repeat = &done
	opts.Workers = 2
	report, err := Run(context.Background(), opts)
	must(t, err)
	s := report.Summary
	if s.PassRate1 != 0 || s.PassRate2 != 0 || s.TotalTests != 2 || len(s.Failures) != 2 || s.PercentCasesWellFormed != 100 {
		t.Errorf("summary: %+v", s)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("want 4 model requests (2 exercises × 2 tries of one turn), got %d", len(reqs))
	}
	for _, r := range report.Results {
		if len(r.Tries) != 2 || r.Tries[0].Passed || r.Tries[1].Passed || r.Tries[0].TestOutput == "" {
			t.Fatalf("%s: tries %+v", r.ID, r.Tries)
		}
		// A line that says what failed, from the first try's output, must reach the model in the second try.
		var failLine string
		for _, l := range strings.Split(r.Tries[0].TestOutput, "\n") {
			if strings.HasPrefix(l, "--- FAIL: ") || strings.HasPrefix(l, "FAILED ") {
				failLine = strings.TrimSpace(l)
				break
			}
		}
		if failLine == "" {
			t.Fatalf("%s: no failure line in the test output:\n%s", r.ID, r.Tries[0].TestOutput)
		}
		seen := 0
		for _, req := range reqs {
			goal := req.Messages[1].Text()
			if strings.Contains(goal, "# "+r.Slug) && strings.Contains(goal, failLine) {
				seen++
				if !strings.Contains(goal, "The tests are correct: do not change them") {
					t.Errorf("%s: the retry prompt lacks the reminder:\n%s", r.ID, goal)
				}
			}
		}
		if seen != 1 {
			t.Errorf("%s: %d requests carry the first try's failure %q, want exactly the second try's", r.ID, seen, failLine)
		}
	}
}

// A model that replaces the tests with ones that pass still fails: the grader restores them. A model that plants
// a usercustomize.py in its sandbox home, which makes every python run print a pytest success and exit 0, fools
// its own test run but not the grader, whose sandbox keeps its caches and home elsewhere.
func TestRunCheatingFails(t *testing.T) {
	exs := runnerExercises(t)
	goEx, pyEx := exs[0], exs[2]
	trivialGo := "package " + strings.ReplaceAll(goEx.Slug, "-", "") + "\n\nimport \"testing\"\n\nfunc TestFine(t *testing.T) {}\n"
	var goCalls []looptest.Call
	for _, f := range goEx.Test {
		goCalls = append(goCalls, looptest.Call{Name: "sandbox_write_file", Args: looptest.Args(map[string]string{"path": path.Join(goEx.Slug, f), "content": trivialGo})})
	}
	others, err := sourceFiles(goEx)
	must(t, err)
	for _, f := range others {
		if !strings.HasSuffix(f, "_test.go") || slices.Contains(goEx.Test, f) {
			continue
		}
		goCalls = append(goCalls, looptest.Call{Name: "sandbox_delete_path", Args: looptest.Args(map[string]string{"path": path.Join(goEx.Slug, f)})})
	}
	pyCalls := []looptest.Call{
		{Name: "sandbox_run_command", Args: looptest.Args(map[string]any{"command": plantUsercustomize, "cwd": pyEx.Slug})},
		{Name: "sandbox_write_file", Args: looptest.Args(map[string]string{"path": path.Join(pyEx.Slug, pyEx.Test[0]), "content": "def test_fine():\n    pass\n"})},
	}
	opts, _ := newRunOptions(t, []Exercise{goEx, pyEx},
		looptest.Step{Calls: goCalls}, done, looptest.Step{Calls: goCalls}, done,
		looptest.Step{Calls: pyCalls}, done, looptest.Step{Calls: pyCalls}, done)
	report, err := Run(context.Background(), opts)
	must(t, err)
	if report.Summary.PassRate2 != 0 {
		t.Errorf("a cheating model passed: %+v", report.Summary)
	}
	for _, r := range report.Results {
		if len(r.Tries) != 2 {
			t.Fatalf("%s: %d tries", r.ID, len(r.Tries))
		}
		ex := goEx
		if r.Lang == "python" {
			ex = pyEx
		}
		for _, tr := range r.Tries {
			if tr.Passed || !slices.Contains(tr.Restored, path.Join(ex.Slug, ex.Test[0])) {
				t.Errorf("%s try %d: passed %v, restored %v", r.ID, tr.Try, tr.Passed, tr.Restored)
			}
		}
	}
	// The planted file did work inside the model's own sandbox: its pytest run over the real, failing tests
	// "passed" (the tests are replaced only after it).
	if out := toolOutputs(t, TranscriptPath(opts.RunDir, pyEx.ID(), 1)); !plantWorked(out) {
		t.Errorf("the attack did not take effect in the agent's sandbox, so this test proves nothing:\n%s", out)
	}
}

// toolOutputs is every tool result in a transcript, concatenated.
func toolOutputs(t *testing.T, transcript string) string {
	t.Helper()
	f, err := os.Open(transcript)
	must(t, err)
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev struct {
			Type   string          `json:"type"`
			Result json.RawMessage `json:"result"`
		}
		must(t, json.Unmarshal(sc.Bytes(), &ev))
		if ev.Type == "tool" {
			var res loop.ToolResult
			must(t, json.Unmarshal(ev.Result, &res))
			b.WriteString(res.Text)
			b.Write(res.Structured)
			b.WriteString("\n")
		}
	}
	must(t, sc.Err())
	return b.String()
}

func TestRunResume(t *testing.T) {
	exs := runnerExercises(t)
	py1, py2 := exs[2], exs[3]
	opts, srv := newRunOptions(t, []Exercise{py1}, looptest.Step{Calls: referenceCalls(t, py1)}, done)
	_, err := Run(context.Background(), opts)
	must(t, err)
	first, _, err := LoadResult(opts.RunDir, py1.ID())
	must(t, err)

	// Without -resume the folder is refused; with another model it cannot be resumed.
	opts.Exercises = []Exercise{py1, py2}
	if _, err := Run(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "already holds a result for "+py1.ID()) {
		t.Errorf("a second run into the same folder: %v", err)
	}
	other := opts
	other.Resume = true
	other.Model, err = openaichat.New(openaichat.Config{Model: "another", BaseURL: srv.BaseURL, APIKey: "test"})
	must(t, err)
	if _, err := Run(context.Background(), other); err == nil || !strings.Contains(err.Error(), "cannot resume") {
		t.Errorf("resuming with another model: %v", err)
	}

	// The resume only runs the exercise without a result: the script holds answers for py2 alone.
	opts.Resume = true
	before := len(srv.Requests())
	srv2 := looptest.New(t, looptest.Step{Calls: referenceCalls(t, py2), Check: func(t testing.TB, req looptest.Request) {
		if !strings.Contains(req.Messages[1].Text(), "# "+py2.Slug) {
			t.Errorf("the resumed run asked about another exercise")
		}
	}}, done)
	opts.Model, err = openaichat.New(openaichat.Config{Model: "scripted", BaseURL: srv2.BaseURL, APIKey: "test"})
	must(t, err)
	report, err := Run(context.Background(), opts)
	must(t, err)
	if report.Resumed != 1 || len(report.Results) != 2 || report.Summary.PassRate1 != 100 || len(srv2.Requests()) != 2 || len(srv.Requests()) != before {
		t.Errorf("resumed %d, results %d, summary %+v, requests %d", report.Resumed, len(report.Results), report.Summary, len(srv2.Requests()))
	}
	again, _, err := LoadResult(opts.RunDir, py1.ID())
	must(t, err)
	if !again.StartedAt.Equal(first.StartedAt) {
		t.Error("the finished result was run again")
	}
}

// The model cannot get at the reference solution: not through the filesystem server (inside the workspace, up
// out of it, by absolute path), nor through commands (cat of the pristine source, a search of the disk). A call
// to a tool that does not exist counts as malformed.
func TestRunAgentCannotReadReference(t *testing.T) {
	exs := runnerExercises(t)
	ex := exs[2] // python pig-latin: it has .approaches too
	example, err := os.ReadFile(filepath.Join(ex.Dir, ".meta", "example.py"))
	must(t, err)
	secret := uniqueLine(t, ex, string(example))
	pristine := filepath.Join(ex.Dir, ".meta", "example.py")
	read := func(p string) looptest.Call {
		return looptest.Call{Name: "sandbox_read_file", Args: looptest.Args(map[string]string{"path": p})}
	}
	run := func(cmd string) looptest.Call {
		return looptest.Call{Name: "sandbox_run_command", Args: looptest.Args(map[string]string{"command": cmd})}
	}
	calls := []looptest.Call{
		read(".meta/example.py"), read(ex.Slug + "/.meta/example.py"), read("../" + ex.Slug + "/.meta/example.py"),
		read("../../../../../" + ex.Lang + "/exercises/practice/" + ex.Slug + "/.meta/example.py"), read(pristine),
		{Name: "sandbox_list_files", Args: looptest.Args(map[string]any{"path": ".", "depth": 5})},
		{Name: "sandbox_search_files", Args: looptest.Args(map[string]string{"pattern": regexpQuote(secret)})},
		run("cat " + shellQuote(pristine)),
		run("cat " + ex.Slug + "/.meta/example.py ../" + ex.Slug + "/.meta/example.py"),
		run("grep -rF " + shellQuote(secret) + " " + shellQuote(filepath.Dir(filepath.Dir(filepath.Dir(ex.Dir)))) + " .. ../.. 2>&1 | head -5"),
		{Name: "sandbox_read_reference", Args: "{}"},
	}
	opts, _ := newRunOptions(t, []Exercise{ex}, looptest.Step{Calls: calls}, done, done)
	report, err := Run(context.Background(), opts)
	must(t, err)
	out := toolOutputs(t, TranscriptPath(opts.RunDir, ex.ID(), 1))
	t.Logf("what the model got:\n%s", out)
	if strings.Contains(out, secret) {
		t.Errorf("a tool revealed the reference solution (%q):\n%s", secret, out)
	}
	if strings.Count(out, "\n") != len(calls) {
		t.Errorf("want %d tool results, got:\n%s", len(calls), out)
	}
	r := report.Results[0]
	if r.PassedOnTry() != 0 || r.Tries[0].MalformedResponses != 1 || report.Summary.PercentCasesWellFormed != 0 {
		t.Errorf("result %+v, summary %+v", r, report.Summary)
	}
}

// uniqueLine is the longest line of the reference solution that appears in no file the model is given.
func uniqueLine(t *testing.T, ex Exercise, example string) string {
	t.Helper()
	files, err := sourceFiles(ex)
	must(t, err)
	var given strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(ex.Dir, f))
		must(t, err)
		given.Write(data)
	}
	best := ""
	for _, l := range strings.Split(example, "\n") {
		l = strings.TrimSpace(l)
		if len(l) > len(best) && !strings.Contains(given.String(), l) {
			best = l
		}
	}
	if len(best) < 12 {
		t.Fatalf("no distinctive line in the reference solution of %s", ex.ID())
	}
	return best
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteRune('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestMalformedCalls(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	lines := `{"type":"start","goal":"tool"}
{"type":"tool","outcome":"ok"}
{"type":"tool","outcome":"bad_arguments"}
{"type":"tool","outcome":"tool_error"}
{"type":"tool","outcome":"unknown_tool"}
{"type":"model","message":{"content":"\"tool\""}}
`
	must(t, os.WriteFile(p, []byte(lines), 0o644))
	n, err := MalformedCalls(p)
	if err != nil || n != 2 {
		t.Errorf("MalformedCalls = %d, %v; want 2", n, err)
	}
}

func TestProgressLine(t *testing.T) {
	var b strings.Builder
	p := NewProgress(&b, 4, false)
	p.add(ExerciseResult{ID: "go/a", Tries: []TryResult{{Try: 1, Passed: true, Cost: 0.25}}}, true)
	p.add(ExerciseResult{ID: "go/b", Tries: []TryResult{{Try: 1}, {Try: 2, Passed: true, Cost: 0.5}}}, false)
	p.add(ExerciseResult{ID: "rust/c", Ungradable: "no cargo"}, false)
	line := p.line()
	for _, want := range []string{"bench 3/4", "passed 2/2 (100.0%)", "ungradable 1", "$0.7500", "ETA ", "last: rust/c ungradable"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "SUSPECT") {
		t.Errorf("progress line %q shows suspects before any", line)
	}
	p.add(ExerciseResult{ID: "go/d", Tries: []TryResult{{Try: 1, Suspect: "calls the process's exit"}}}, false)
	line = p.line()
	for _, want := range []string{"bench 4/4", "passed 2/3", "SUSPECT 1", "last: go/d SUSPECT"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
	if got := strings.Count(b.String(), "\n"); got != 4 {
		t.Errorf("want one line per update off a terminal, got %d:\n%s", got, b.String())
	}
}

func TestProgressLineOnATerminal(t *testing.T) {
	var b strings.Builder
	p := NewProgress(&b, 2, true)
	p.started()
	p.add(ExerciseResult{ID: "go/a", Tries: []TryResult{{Try: 1}, {Try: 2, Error: "model: connection refused"}}}, false)
	p.finish()
	out := b.String()
	if !strings.HasPrefix(out, "\r\033[Kbench 0/2") || !strings.Contains(out, "running 1") ||
		!strings.Contains(out, "\r\033[Kbench 1/2  passed 0/1 (0.0%)  ERRORS 1") || !strings.HasSuffix(out, "last: go/a ERROR\n") {
		t.Errorf("terminal output %q", out)
	}
}

// One seeded exercise per language: the model first runs the grader's own test command in its sandbox (the
// toolchains must be there for it: jest lives outside the system folders), then writes the reference solution,
// which must pass. By default JavaScript only, the language whose toolchain needs the sandbox's extra read
// folders; GOALBOX_RUNNER_LANGS=all (about 5 minutes on 2 cores) or a list takes more.
func TestRunEveryLanguage(t *testing.T) {
	langs := []string{"javascript"}
	if v := os.Getenv("GOALBOX_RUNNER_LANGS"); v == "all" {
		langs = Languages
	} else if v != "" {
		langs = strings.Split(v, ",")
	}
	dir := benchmarkDir(t)
	g := NewGrader()
	g.Toolchains.CompilerCache = true
	gsb, closeG, err := inProcessSandbox(g.Toolchains, GraderCacheDir())(context.Background(), t.TempDir())
	must(t, err)
	defer closeG()
	var exs []Exercise
	var steps []looptest.Step
	for _, lang := range langs {
		some, err := Discover(dir, Filter{Languages: []string{lang}, Seed: 11, Limit: 1})
		must(t, err)
		ex := some[0]
		cmd, why, err := g.Command(context.Background(), gsb, ex)
		must(t, err)
		if why != "" {
			t.Logf("%s: ungradable here: %s", ex.ID(), why)
			continue
		}
		exs = append(exs, ex)
		steps = append(steps,
			looptest.Step{Calls: []looptest.Call{{Name: "sandbox_run_command", Args: looptest.Args(map[string]any{"command": cmd, "cwd": ex.Slug, "timeout_seconds": 300})}}},
			looptest.Step{Calls: referenceCalls(t, ex)}, done)
	}
	opts, _ := newRunOptions(t, exs, steps...)
	opts.Limits.Timeout = 10 * time.Minute
	report, err := Run(context.Background(), opts)
	must(t, err)
	for _, r := range report.Results {
		if r.PassedOnTry() != 1 {
			t.Errorf("%s: the reference solution did not pass on try 1: %+v", r.ID, r.Tries)
		}
		out := toolOutputs(t, TranscriptPath(opts.RunDir, r.ID, 1))
		var res struct {
			ExitCode int    `json:"exit_code"`
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
		}
		first, _, _ := strings.Cut(out, "\n")
		if i := strings.Index(first, "}{"); i >= 0 {
			first = first[:i+1] // text and structured content carry the same JSON
		}
		must(t, json.Unmarshal([]byte(first), &res))
		// Exit 0 is allowed: a refactoring exercise's stub passes its tests.
		if res.ExitCode == 126 || res.ExitCode == 127 || strings.Contains(res.Stdout+res.Stderr, "Permission denied") {
			t.Errorf("%s: the grader's command in the model's sandbox on the stub: exit %d\n%s\n%s", r.ID, res.ExitCode, tail(res.Stdout, 1500), tail(res.Stderr, 1500))
		}
		if r.Lang == "javascript" && !strings.Contains(res.Stdout+res.Stderr, "Tests:") {
			t.Errorf("%s: jest did not run in the model's sandbox:\n%s\n%s", r.ID, tail(res.Stdout, 1500), tail(res.Stderr, 1500))
		}
	}
	t.Logf("\n%s", report.Summary.Table())
}

// The goal mode's in-process servers keep their caches in the executor's default folder. A model working there
// can plant a usercustomize.py in that home which makes every Python run print a pytest success and exit 0; the
// grader must not pick it up, so its sandbox has a cache folder of its own.
func TestGraderCacheIsApartFromTheGoalMode(t *testing.T) {
	exs := runnerExercises(t)
	ex := exs[3]                            // python/proverb
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the executor's default cache folder moves here for this test
	ctx := context.Background()
	ws, err := Prepare(ex, t.TempDir())
	must(t, err)

	asb, err := sandbox.Host(ctx, sandbox.LocalOptions{Workspace: ws.Root}) // as `agent -goal` starts them
	must(t, err)
	defer asb.Close()
	res, err := asb.Call(ctx, "sandbox_run_command", json.RawMessage(looptest.Args(map[string]string{"command": plantUsercustomize, "cwd": ex.Slug})))
	must(t, err)
	if !plantWorked(res.Text) {
		t.Fatalf("the planted file did not take effect in the goal mode's sandbox, so this test proves nothing: %s", res.Text)
	}

	g := NewGrader()
	gsb, closeG, err := inProcessSandbox(g.Toolchains, GraderCacheDir())(ctx, ws.Root)
	must(t, err)
	defer closeG()
	grade, err := g.Grade(ctx, gsb, ex, ws)
	must(t, err)
	if grade.Passed || grade.Ungradable != "" {
		t.Errorf("the stub passed the grader after a planted usercustomize.py: %+v", grade)
	}
}

// plantUsercustomize is a model's command that puts a usercustomize.py in its home's Python user site: every later
// pytest run in a sandbox with that home prints a success summary and exits 0 before a test runs. It then runs
// pytest over the exercise's tests to show the effect.
const plantUsercustomize = `site=$(/usr/bin/python3 -m site --user-site) && mkdir -p "$site" && ` +
	`printf 'import os, sys\nif "pytest" in " ".join(sys.orig_argv):\n    print("1 passed")\n    sys.stdout.flush()\n    os._exit(0)\n' > "$site/usercustomize.py" && ` +
	`/usr/bin/python3 -m pytest -p no:cacheprovider; echo "exit $?"`

// plantWorked says the pytest run after the plant "passed" without running the failing tests.
func plantWorked(out string) bool {
	return strings.Contains(out, "1 passed") && strings.Contains(out, "exit 0") && !strings.Contains(out, "failed")
}

// BenchmarkRunnerOverhead sets one try of the runner on a Python exercise (fresh copy, both in-process servers
// and their MCP sessions, a scripted model's one turn, transcript, grade, result, summary) beside its anchor, the
// grade alone (fresh copy, grading sandbox, grade): the difference is what the runner adds per exercise.
//
//	cd agent && go test -run '^$' -bench RunnerOverhead -benchtime 20x ./bench
func BenchmarkRunnerOverhead(b *testing.B) {
	dir := benchmarkDir(b)
	ex, err := LoadExercise(filepath.Join(dir, "python", "exercises", "practice", "proverb"), "python")
	fatalIf(b, err)
	srv := looptest.New(b)
	srv.Repeat = &done
	model, err := openaichat.New(openaichat.Config{Model: "scripted", BaseURL: srv.BaseURL, APIKey: "test"})
	fatalIf(b, err)
	g := NewGrader()
	agentCache := b.TempDir()
	b.Run("grade-only", func(b *testing.B) {
		for b.Loop() {
			ws, err := Prepare(ex, b.TempDir())
			fatalIf(b, err)
			sb, closeSB, err := inProcessSandbox(g.Toolchains, GraderCacheDir())(context.Background(), ws.Root)
			fatalIf(b, err)
			res, err := g.Grade(context.Background(), sb, ex, ws)
			fatalIf(b, err)
			closeSB()
			if res.Passed {
				b.Fatal("the stub passed")
			}
		}
	})
	b.Run("runner", func(b *testing.B) {
		var exercise, grade float64
		for b.Loop() {
			report, err := Run(context.Background(), RunOptions{
				Exercises: []Exercise{ex}, RunDir: b.TempDir(), Tries: 1, Model: model, Limits: loop.DefaultLimits(), Grader: g,
				GradeSandbox: inProcessSandbox(g.Toolchains, GraderCacheDir()), AgentSandbox: inProcessSandbox(g.Toolchains, agentCache),
			})
			fatalIf(b, err)
			if report.Summary.TotalTests != 1 || report.Summary.PassRate1 != 0 {
				b.Fatalf("summary %+v", report.Summary)
			}
			exercise += report.Results[0].Seconds
			grade += report.Results[0].Tries[0].GradeSeconds
		}
		// Where the time goes: the exercise's own wall time and, within it, the grade's.
		b.ReportMetric(exercise/float64(b.N), "exercise-s/op")
		b.ReportMetric(grade/float64(b.N), "grade-s/op")
	})
}

func fatalIf(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// TestRunAllExercises sends every exercise of GOALBOX_RUNNER_ALL (a language list, or "all") through the runner
// with a model that writes the reference solution: each must pass on try 1. It is the runner's counterpart of the
// selftest, for the figures in docs/benchmark.md; without the variable it is skipped.
func TestRunAllExercises(t *testing.T) {
	v := os.Getenv("GOALBOX_RUNNER_ALL")
	if v == "" {
		t.Skip("set GOALBOX_RUNNER_ALL=go,python (or all) to run every exercise of those languages through the runner")
	}
	langs := strings.Split(v, ",")
	if v == "all" {
		langs = Languages
	}
	exs, err := Discover(benchmarkDir(t), Filter{Languages: langs})
	must(t, err)
	g := NewGrader()
	gsb, closeG, err := inProcessSandbox(g.Toolchains, GraderCacheDir())(context.Background(), t.TempDir())
	must(t, err)
	defer closeG()
	var steps []looptest.Step
	var graded []Exercise
	for _, ex := range exs {
		// Left out: exercises this machine cannot grade, and those whose reference solution needs what the stub
		// does not (Rust crates missing from the offline registry): a model writing it fails, as it should.
		_, why, err := g.Command(context.Background(), gsb, ex)
		must(t, err)
		_, refWhy, err := g.command(context.Background(), gsb, ex, true)
		must(t, err)
		if why+refWhy != "" {
			t.Logf("left out %s: %s", ex.ID(), why+refWhy)
			continue
		}
		graded = append(graded, ex)
		steps = append(steps, looptest.Step{Calls: referenceCalls(t, ex)}, done)
	}
	opts, _ := newRunOptions(t, graded, steps...)
	opts.Tries = 1
	opts.Limits.Timeout = 10 * time.Minute
	start := time.Now()
	report, err := Run(context.Background(), opts)
	must(t, err)
	t.Logf("wall %s\n%s", time.Since(start).Round(time.Second), report.Summary.Table())
	// java/mazy-mice is found ungradable only from javac's output (an AssertJ older than its tests), so it cannot be
	// left out beforehand; it counts neither way.
	if report.Summary.PassRate1 != 100 || len(report.Summary.Failures) != 0 {
		t.Errorf("reference solutions failed: %v", report.Summary.Failures)
	}
	for _, r := range report.Results {
		if r.Ungradable != "" && r.ID != "java/mazy-mice" {
			t.Errorf("%s found ungradable while running: %s", r.ID, r.Ungradable)
		}
	}
}
