package bench

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/goalbox/goalbox/pkg/headtail"
)

// The prompt texts are files, so they can be read and changed as text.
//
//go:embed prompts/*.md
var promptFiles embed.FS

var prompts = template.Must(template.ParseFS(promptFiles, "prompts/*.md"))

// langNames are the tracks as the prompt names them.
var langNames = map[string]string{"cpp": "C++", "go": "Go", "java": "Java", "javascript": "JavaScript", "python": "Python", "rust": "Rust"}

// docFiles are the exercise's own instructions, in the order they are given to the model.
var docFiles = []string{"introduction.md", "instructions.md", "instructions.append.md"}

// InstructionsPrompt is the first message of an exercise: its instructions from .docs/ (introduction,
// instructions, appendix) and the files the model may change, as workspace paths. testCommand, when not empty, is
// shown so the model's own test runs match the grader's (see Grader.Command).
func InstructionsPrompt(ex Exercise, ws Workspace, testCommand string) (string, error) {
	var docs []string
	for _, name := range docFiles {
		data, err := os.ReadFile(filepath.Join(ex.Dir, ".docs", name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("%s: reading .docs/%s: %w", ex.ID(), name, errors.Unwrap(err))
		}
		docs = append(docs, strings.TrimSpace(string(data)))
	}
	if len(docs) == 0 {
		return "", fmt.Errorf("%s: .docs/ has none of %s", ex.ID(), strings.Join(docFiles, ", "))
	}
	return render("instructions.md", map[string]any{
		"Title":        ex.Slug,
		"Instructions": strings.Join(docs, "\n\n"),
		"Files":        ws.Files(ex.Solution),
		"Tests":        ws.Files(ex.Test),
		"Language":     langNames[ex.Lang],
		"Folder":       ws.Rel,
		"TestCommand":  testCommand,
	})
}

// MaxRetryOutput bounds the test output quoted in a retry prompt: its first quarter and its last three quarters are
// kept, since test runners print their failures and summary last.
const MaxRetryOutput = 16 << 10

// Retry is what the next try is told of the tries before it.
type Retry struct {
	Output string // the last try's test output
	Tests  int    // tests the exercise's test files define
	// BestTry passed the most tests so far (BestPassed of Tests); LastTry is the try just graded. BestTry is 0 when
	// nothing is known of the counts.
	BestTry, BestPassed, LastTry, LastPassed int
	// Keeps says the runner can put BestTry's code back if the next try passes fewer tests.
	Keeps bool
	// Regression is the agent's hint (loop.RegressionHint) when LastTry passed fewer tests than BestTry.
	Regression string
}

// RetryPrompt is the message for the next try: the failed try's test output, cut to MaxRetryOutput, the reminder
// that the tests are correct, and the bar: how many tests the best try so far passed (with the diff since it when
// the last try did worse).
func RetryPrompt(ex Exercise, ws Workspace, r Retry) (string, error) {
	return render("retry.md", map[string]any{
		"Output":     headtail.Keep(quietOutput(ex.Lang, r.Output), MaxRetryOutput/4, MaxRetryOutput-MaxRetryOutput/4),
		"Files":      ws.Files(ex.Solution),
		"Tests":      r.Tests,
		"BestTry":    r.BestTry,
		"BestPassed": r.BestPassed,
		"LastTry":    r.LastTry,
		"LastPassed": r.LastPassed,
		"Keeps":      r.Keeps,
		"Regression": r.Regression,
	})
}

func render(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := prompts.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("prompt %s: %w", name, err)
	}
	return b.String(), nil
}

// goNoise are the per-test lines of go test -v that say a test started or passed: the model needs the failures.
var goNoise = regexp.MustCompile(`(?m)^\s*(=== (RUN|PAUSE|CONT|NAME)|--- PASS:).*\n`)

func quietOutput(lang, out string) string {
	if lang == "go" {
		return goNoise.ReplaceAllString(out, "")
	}
	return out
}
