package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestResultsRoundTripAndSummary(t *testing.T) {
	run := t.TempDir()
	results := []ExerciseResult{
		{ID: "go/a", Lang: "go", Slug: "a", Model: "m", Seconds: 10, Tries: []TryResult{{Try: 1, Passed: true, Cost: 0.5, PromptTokens: 100, CompletionTokens: 10}}},
		{ID: "go/b", Lang: "go", Slug: "b", Model: "m", Seconds: 20, Tries: []TryResult{{Try: 1}, {Try: 2, Passed: true, MalformedResponses: 1}}},
		{ID: "python/c", Lang: "python", Slug: "c", Model: "m", Seconds: 30, Tries: []TryResult{{Try: 1, TimedOut: true}, {Try: 2, Error: "model: 500"}}},
		{ID: "rust/d", Lang: "rust", Slug: "d", Model: "m", Ungradable: "needs crates"},
	}
	for _, r := range results {
		must(t, SaveResult(run, r))
	}
	if _, err := os.Stat(filepath.Join(run, "results", "go", "a.json")); err != nil {
		t.Fatal("result file not at results/<lang>/<slug>.json")
	}
	var loaded []ExerciseResult
	for _, r := range results {
		l, ok, err := LoadResult(run, r.ID)
		must(t, err)
		if ok {
			loaded = append(loaded, l)
		}
	}
	if len(loaded) != 4 || loaded[2].ID != "python/c" || loaded[1].Tries[1].MalformedResponses != 1 {
		t.Fatalf("loaded %+v", loaded)
	}
	r, ok, err := LoadResult(run, "go/zzz")
	if ok || err != nil || r.ID != "" {
		t.Errorf("missing result: %v %v", ok, err)
	}
	must(t, os.WriteFile(ResultPath(run, "go/broken"), []byte("{"), 0o644))
	if _, _, err := LoadResult(run, "go/broken"); err == nil || !strings.Contains(err.Error(), "results/go/broken.json") {
		t.Errorf("broken result file: %v", err)
	}

	s := Summarize(loaded[:4])
	if s.TotalTests != 3 || s.Ungradable != 1 {
		t.Errorf("cases %d ungradable %d", s.TotalTests, s.Ungradable)
	}
	if s.PassRate1 != 33.3 || s.PassRate2 != 66.7 || s.PercentCasesWellFormed != 66.7 {
		t.Errorf("rates %v %v well formed %v", s.PassRate1, s.PassRate2, s.PercentCasesWellFormed)
	}
	if s.SecondsPerCase != 20 || s.TotalCost != 0.5 || s.TestTimeouts != 1 || s.ErrorOutputs != 1 || s.PromptTokens != 100 {
		t.Errorf("summary %+v", s)
	}
	if !slices.Equal(s.Failures, []string{"python/c"}) {
		t.Errorf("failures %v", s.Failures)
	}
	if len(s.Languages) != 3 || s.Languages[0].Lang != "go" || s.Languages[0].PassRate2 != 100 || s.Languages[0].PassRate1 != 50 {
		t.Errorf("rows %+v", s.Languages)
	}
	table := s.Table()
	for _, want := range []string{"go", "python", "total", "33.3%", "66.7%", "failed: python/c"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	must(t, SaveSummary(run, s))
	if _, err := os.Stat(filepath.Join(run, "summary.json")); err != nil {
		t.Error(err)
	}
}

func TestPrompts(t *testing.T) {
	ex := oneExercise(t, "java", "bowling")
	ws := Workspace{Root: "/x", Rel: ex.Slug}
	p, err := InstructionsPrompt(ex, ws, "javac ...")
	must(t, err)
	instr, _ := os.ReadFile(filepath.Join(ex.Dir, ".docs", "instructions.md"))
	firstLine := strings.SplitN(strings.TrimSpace(string(instr)), "\n", 2)[0]
	for _, want := range []string{firstLine, "`bowling/src/main/java/BowlingGame.java`", "bowling/src/test/java/BowlingGameTest.java", "Java", "javac ..."} {
		if !strings.Contains(p, want) {
			t.Errorf("instructions prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, ".meta") || strings.Contains(p, ex.Dir) {
		t.Error("the prompt names the reference folder or a host path")
	}
	// introduction.md comes before instructions.md, and the appendix after, when they exist.
	withIntro := oneExercise(t, "python", "zebra-puzzle")
	p, err = InstructionsPrompt(withIntro, Workspace{Rel: withIntro.Slug}, "")
	must(t, err)
	if _, err := os.Stat(filepath.Join(withIntro.Dir, ".docs", "introduction.md")); err == nil {
		intro, _ := os.ReadFile(filepath.Join(withIntro.Dir, ".docs", "introduction.md"))
		head := strings.SplitN(strings.TrimSpace(string(intro)), "\n", 2)[0]
		if i, j := strings.Index(p, head), strings.Index(p, "## Your task"); i < 0 || i > j {
			t.Errorf("introduction missing or misplaced:\n%s", p)
		}
	}
	if strings.Contains(p, "grader runs the tests") {
		t.Error("no test command was given, but the prompt shows one")
	}

	goEx := oneExercise(t, "go", "bowling")
	out := "=== RUN   TestRoll\n--- PASS: TestRoll (0.00s)\n--- FAIL: TestScore (0.00s)\n    bowling_test.go:9: got 1 want 2\nFAIL\n" + strings.Repeat("x", 40<<10)
	r, err := RetryPrompt(goEx, Workspace{Rel: goEx.Slug}, Retry{Output: out})
	must(t, err)
	if strings.Contains(r, "--- PASS") || strings.Contains(r, "=== RUN") || !strings.Contains(r, "--- FAIL: TestScore") {
		t.Errorf("retry output not filtered:\n%.400s", r)
	}
	if !strings.Contains(r, "The tests are correct") || !strings.Contains(r, "`bowling/bowling.go`") || !strings.Contains(r, "bytes left out") {
		t.Errorf("retry prompt:\n%.300s", r)
	}
	if len(r) > MaxRetryOutput+1000 {
		t.Errorf("retry prompt is %d bytes", len(r))
	}
}
