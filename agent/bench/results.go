package bench

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TryResult is one try at an exercise: the agent's run, then the grade.
type TryResult struct {
	Try        int      `json:"try"` // 1-based
	Passed     bool     `json:"passed"`
	ExitCode   int      `json:"exit_code"`
	TimedOut   bool     `json:"timed_out,omitempty"`
	TestOutput string   `json:"test_output"`
	Restored   []string `json:"restored,omitempty"` // test or build files the model had changed, put back for grading
	Suspect    string   `json:"suspect,omitempty"`  // why the grader distrusts this try's result; never passed then
	Verdict    string   `json:"verdict,omitempty"`  // why the grade failed, as the grader sees it
	Tests      int      `json:"tests"`              // tests the pristine files define
	TestsOK    int      `json:"tests_passed"`       // of those, reported passed

	Turns              int     `json:"turns"`
	StopReason         string  `json:"stop_reason"` // why the agent loop ended: one of agent/loop's Stop* reasons ("done", "max_turns", "timeout"...)
	PromptTokens       int64   `json:"prompt_tokens"`
	CompletionTokens   int64   `json:"completion_tokens"`
	Cost               float64 `json:"cost"`                // USD; 0 when no price is known
	MalformedResponses int     `json:"malformed_responses"` // tool calls the model got wrong (bad JSON, unknown tool)
	AgentSeconds       float64 `json:"agent_seconds"`
	GradeSeconds       float64 `json:"grade_seconds"`
	Error              string  `json:"error,omitempty"` // an infrastructure failure during this try
}

// ExerciseResult is the result file of one exercise: results/<lang>/<slug>.json in the run folder.
type ExerciseResult struct {
	ID         string      `json:"id"` // lang/slug
	Lang       string      `json:"language"`
	Slug       string      `json:"slug"`
	Model      string      `json:"model,omitempty"`
	Sandbox    string      `json:"sandbox,omitempty"` // the pool's sandbox that ran and graded it (local-N for a local run)
	Tries      []TryResult `json:"tries"`
	Ungradable string      `json:"ungradable,omitempty"` // set when the exercise could not be graded here; no tries then
	// KeptTry is the try whose code the workspace was left with: the last one, or an earlier one that passed more
	// tests, restored after the last (keep.go). KeptGrade is the grade of the workspace after a restore; without
	// it, the kept try's own grade is the final one. KeepError says why an earlier, better try could not be put
	// back (its checkpoint could not be taken, the restore was refused): the sandbox's checkpoint store, which a
	// resume would meet again, so it is not an infrastructure error; a failed grade after the restore is
	// (KeptGrade.Error).
	KeptTry   int        `json:"kept_try,omitempty"`
	KeptGrade *KeptGrade `json:"kept_grade,omitempty"`
	KeepError string     `json:"keep_error,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	Seconds   float64    `json:"seconds"`
}

// KeptGrade is the grade of a workspace the runner put back to an earlier try.
type KeptGrade struct {
	Passed       bool    `json:"passed"`
	Tests        int     `json:"tests"`
	TestsOK      int     `json:"tests_passed"`
	Suspect      string  `json:"suspect,omitempty"`
	Verdict      string  `json:"verdict,omitempty"`
	TestOutput   string  `json:"test_output"`
	GradeSeconds float64 `json:"grade_seconds"`
	// Error is a grade that could not be done: like a try's Error, an infrastructure failure that a resume runs
	// again, since the result then has no grade of the state the workspace is left in.
	Error string `json:"error,omitempty"`
}

func newKeptGrade(g GradeResult) KeptGrade {
	return KeptGrade{Passed: g.Passed, Tests: g.Tests, TestsOK: g.TestsOK, Suspect: g.Suspect, Verdict: g.Verdict,
		TestOutput: g.Output, GradeSeconds: g.Seconds}
}

// PassedOnTry is the 1-based try that passed, or 0.
func (r ExerciseResult) PassedOnTry() int {
	for _, t := range r.Tries {
		if t.Passed {
			return t.Try
		}
	}
	return 0
}

// Cost, tokens and malformed responses summed over the tries.
func (r ExerciseResult) totals() (cost float64, prompt, completion int64, malformed int, timeouts int) {
	for _, t := range r.Tries {
		cost += t.Cost
		prompt += t.PromptTokens
		completion += t.CompletionTokens
		malformed += t.MalformedResponses
		if t.TimedOut {
			timeouts++
		}
	}
	return
}

// ResultPath is where SaveResult keeps id's result in runDir.
func ResultPath(runDir, id string) string {
	return filepath.Join(runDir, "results", filepath.FromSlash(id)+".json")
}

// SaveResult writes r's result file atomically (a temp file renamed into place), so a crash or a resume never
// sees half a file.
func SaveResult(runDir string, r ExerciseResult) error {
	return writeJSON(ResultPath(runDir, r.ID), r)
}

// LoadResult reads id's result; ok is false when there is none yet.
func LoadResult(runDir, id string) (r ExerciseResult, ok bool, err error) {
	data, err := os.ReadFile(ResultPath(runDir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return ExerciseResult{}, false, nil
	}
	if err != nil {
		return ExerciseResult{}, false, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return ExerciseResult{}, false, fmt.Errorf("results/%s.json is not a valid result: %v", id, err)
	}
	return r, true, nil
}

// LangRow is one language's line of a summary.
type LangRow struct {
	Lang       string  `json:"language"`
	Cases      int     `json:"cases"` // graded exercises
	Passed1    int     `json:"passed_1"`
	Passed2    int     `json:"passed_2"`
	PassRate1  float64 `json:"pass_rate_1"`
	PassRate2  float64 `json:"pass_rate_2"`
	Ungradable int     `json:"ungradable"`
	Suspect    int     `json:"suspect"` // graded cases with a suspect try (counted in cases, never as passed)
	Cost       float64 `json:"cost"`
	Seconds    float64 `json:"seconds"`
}

// Summary uses the Aider leaderboard's field names where they exist. Rates are percentages of graded cases;
// pass_rate_2 counts an exercise passed on try 1 or try 2.
type Summary struct {
	Model                  string    `json:"model,omitempty"`
	PassRate1              float64   `json:"pass_rate_1"`
	PassRate2              float64   `json:"pass_rate_2"`
	PercentCasesWellFormed float64   `json:"percent_cases_well_formed"`
	TotalTests             int       `json:"total_tests"` // graded cases
	SecondsPerCase         float64   `json:"seconds_per_case"`
	TotalCost              float64   `json:"total_cost"`
	PromptTokens           int64     `json:"prompt_tokens"`
	CompletionTokens       int64     `json:"completion_tokens"`
	NumMalformedResponses  int       `json:"num_malformed_responses"`
	TestTimeouts           int       `json:"test_timeouts"`
	ErrorOutputs           int       `json:"error_outputs"` // tries that ended in an infrastructure error
	Ungradable             int       `json:"ungradable"`
	Suspect                int       `json:"suspect"`       // graded cases with a suspect try; never counted as passed
	SuspectCases           []string  `json:"suspect_cases"` // their ids
	Languages              []LangRow `json:"languages"`
	Failures               []string  `json:"failures"` // ids of graded cases that no try passed
	// KeptEarlier are the graded cases whose last try did worse than an earlier one, which the runner put back
	// (kept_try before the last try); KeepErrors those where putting it back failed (keep_error).
	KeptEarlier []string `json:"kept_earlier"`
	KeepErrors  []string `json:"keep_errors"`
}

// Summarize computes the summary of a run's results.
func Summarize(results []ExerciseResult) Summary {
	var s Summary
	rows := map[string]*LangRow{}
	wellFormed := 0
	var seconds float64
	for _, r := range results {
		s.Model = cmp.Or(s.Model, r.Model)
		row := rows[r.Lang]
		if row == nil {
			row = &LangRow{Lang: r.Lang}
			rows[r.Lang] = row
		}
		if r.Ungradable != "" {
			s.Ungradable++
			row.Ungradable++
			continue
		}
		cost, prompt, completion, malformed, timeouts := r.totals()
		s.TotalTests++
		row.Cases++
		s.TotalCost += cost
		row.Cost += cost
		s.PromptTokens += prompt
		s.CompletionTokens += completion
		s.NumMalformedResponses += malformed
		s.TestTimeouts += timeouts
		seconds += r.Seconds
		row.Seconds += r.Seconds
		if malformed == 0 {
			wellFormed++
		}
		suspect := false
		for _, t := range r.Tries {
			if t.Error != "" {
				s.ErrorOutputs++
			}
			suspect = suspect || t.Suspect != ""
		}
		if suspect {
			s.Suspect++
			row.Suspect++
			s.SuspectCases = append(s.SuspectCases, r.ID)
		}
		if r.KeptTry != 0 && r.KeptTry < len(r.Tries) {
			s.KeptEarlier = append(s.KeptEarlier, r.ID)
		}
		if r.KeepError != "" {
			s.KeepErrors = append(s.KeepErrors, r.ID)
		}
		switch r.PassedOnTry() {
		case 1:
			row.Passed1++
			row.Passed2++
		case 2:
			row.Passed2++
		case 0:
			s.Failures = append(s.Failures, r.ID)
		}
	}
	var p1, p2 int
	for _, l := range Languages {
		row := rows[l]
		if row == nil {
			continue
		}
		row.PassRate1, row.PassRate2 = percent(row.Passed1, row.Cases), percent(row.Passed2, row.Cases)
		p1 += row.Passed1
		p2 += row.Passed2
		s.Languages = append(s.Languages, *row)
	}
	s.PassRate1, s.PassRate2 = percent(p1, s.TotalTests), percent(p2, s.TotalTests)
	s.PercentCasesWellFormed = percent(wellFormed, s.TotalTests)
	if s.TotalTests > 0 {
		s.SecondsPerCase = round1(seconds / float64(s.TotalTests))
	}
	if s.Failures == nil {
		s.Failures = []string{}
	}
	if s.SuspectCases == nil {
		s.SuspectCases = []string{}
	}
	if s.KeptEarlier == nil {
		s.KeptEarlier = []string{}
	}
	if s.KeepErrors == nil {
		s.KeepErrors = []string{}
	}
	return s
}

func percent(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return round1(100 * float64(n) / float64(of))
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// SaveSummary writes summary.json in runDir, and summary.txt beside it: the table for people.
func SaveSummary(runDir string, s Summary) error {
	if err := writeJSON(filepath.Join(runDir, "summary.json"), s); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(runDir, "summary.txt"), []byte(s.Table()), 0o644)
}

// Table renders a summary for a terminal: one row per language, a total row, and the failures.
func (s Summary) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s %6s %8s %8s %8s %8s %10s %7s %9s\n", "language", "cases", "passed_1", "passed_2", "rate_1", "rate_2", "ungradable", "suspect", "cost")
	var c, p1, p2 int
	for _, r := range s.Languages {
		fmt.Fprintf(&b, "%-11s %6d %8d %8d %7.1f%% %7.1f%% %10d %7d %9.4f\n", r.Lang, r.Cases, r.Passed1, r.Passed2, r.PassRate1, r.PassRate2, r.Ungradable, r.Suspect, r.Cost)
		c, p1, p2 = c+r.Cases, p1+r.Passed1, p2+r.Passed2
	}
	fmt.Fprintf(&b, "%-11s %6d %8d %8d %7.1f%% %7.1f%% %10d %7d %9.4f\n", "total", c, p1, p2, s.PassRate1, s.PassRate2, s.Ungradable, s.Suspect, s.TotalCost)
	fmt.Fprintf(&b, "well formed %.1f%%, %.1f s per case, %d prompt + %d completion tokens, %d test timeouts\n",
		s.PercentCasesWellFormed, s.SecondsPerCase, s.PromptTokens, s.CompletionTokens, s.TestTimeouts)
	if len(s.Failures) > 0 {
		fmt.Fprintf(&b, "failed: %s\n", strings.Join(s.Failures, " "))
	}
	if len(s.SuspectCases) > 0 {
		fmt.Fprintf(&b, "suspect (a try showed signs of tampering; see the result files): %s\n", strings.Join(s.SuspectCases, " "))
	}
	return b.String()
}

func writeJSON(p string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(data, '\n'))
	if err = errors.Join(err, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// NewTry starts a try's record from its grade; the caller adds the agent's figures (turns, tokens, cost...).
func NewTry(try int, g GradeResult) TryResult {
	return TryResult{
		Try:          try,
		Passed:       g.Passed,
		ExitCode:     g.ExitCode,
		TimedOut:     g.TimedOut,
		TestOutput:   g.Output,
		Restored:     g.Restored,
		Suspect:      g.Suspect,
		Verdict:      g.Verdict,
		Tests:        g.Tests,
		TestsOK:      g.TestsOK,
		GradeSeconds: g.Seconds,
	}
}
