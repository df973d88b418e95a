// Package prompts holds the agent's prompts as text files, embedded at build time, so they can be read and changed
// without touching code. Each file is a text/template; the fields it may use are listed in its own header comment
// and in the Data type.
package prompts

import (
	"embed"
	"fmt"
	"strings"
	"text/template"
)

//go:embed *.md
var files embed.FS

// Data is what the templates can refer to.
type Data struct {
	// Goal is the user's goal, verbatim.
	Goal string
	// TestCommand is the one command that checks the goal (the -verify command), or "" when none was given.
	TestCommand string
	// Processes says the sandbox offers long-running processes (sandbox_start_process).
	Processes bool
	// Command and Output describe a failed verification (verify_failed.md), which exited with ExitCode or, when
	// TimedOut, ran out of time and was killed; StoppedProcesses are the model's processes the agent stopped
	// before it, each as "id (command)".
	Command          string
	ExitCode         int
	TimedOut         bool
	Output           string
	StoppedProcesses []string
	// Best and BestTests name the best state a verify reached and what it said, Now and NowTests the state just
	// checked (regression.md, whose Output is the diff from Best to Now).
	Best, BestTests, Now, NowTests string
	// TextTools are the tools described in the prompt in the text tool mode (empty with native tool calls).
	TextTools []ToolDoc
	// Instructions are the workspace's AGENTS.md; Memory the notes of earlier runs (system.md).
	Instructions string
	Memory       string
	// Times is how many times in a row the model made the failing call Command, or went round the Calls calls
	// Command lists, one a line, one failing or more (repeating.md).
	Times int
	Calls int
	// Plan is the model's plan (plan_approved.md); Diff the workspace's changes since the start (review.md).
	Plan string
	Diff string
}

// RunNote is what the agent keeps of one run in a workspace, for the runs after it (memory.md).
type RunNote struct {
	Time     string   `json:"time"`
	Goal     string   `json:"goal"`
	Outcome  string   `json:"outcome"`
	Stop     string   `json:"stop_reason"`
	Verify   string   `json:"verify,omitempty"`
	Commands []string `json:"commands,omitempty"` // commands that exited 0, most recent last
	Failed   []string `json:"failed,omitempty"`   // commands that failed, with their exit status, and a failed check
}

// ToolDoc is one tool as the text tool mode describes it: its schema is compact JSON.
type ToolDoc struct {
	Name, Description, Schema string
}

var templates = template.Must(template.New("").Option("missingkey=error").Funcs(template.FuncMap{"join": strings.Join}).ParseFS(files, "*.md"))

// Render fills the named prompt file (e.g. "system.md") with d. Lines starting with "{{/*" comments are dropped by
// the template itself; surrounding blank space is trimmed.
func Render(name string, d Data) (string, error) {
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, name, d); err != nil {
		return "", fmt.Errorf("prompt %s: %w", name, err)
	}
	return strings.TrimSpace(b.String()), nil
}
