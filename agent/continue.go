package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goalbox/goalbox/agent/loop"
)

// -continue RUN: a goal run goes on from its transcript, in its workspace, with the conversation it had. RUN is a
// run folder (<runs-dir>/<time>), a transcript file, or "last" for the newest run folder in -runs-dir. The new
// turns are appended to the same transcript and the summary is written again.

// continued is what -continue found of the earlier run.
type continued struct {
	transcript, summary string
	history             *loop.History
	workspace           string
}

// findRun resolves RUN to its transcript and summary files.
func findRun(run, runsDir string) (transcript, summary string, err error) {
	if run == "last" {
		dirs, _ := filepath.Glob(filepath.Join(runsDir, "*", "transcript.jsonl"))
		if len(dirs) == 0 {
			return "", "", fmt.Errorf("-continue last: no run in %s (give the run folder)", runsDir)
		}
		run = filepath.Dir(slices.Max(dirs)) // folders are named by their UTC start time
	}
	st, err := os.Stat(run)
	if err != nil {
		return "", "", fmt.Errorf("-continue: %w", err)
	}
	if st.IsDir() {
		return filepath.Join(run, "transcript.jsonl"), filepath.Join(run, "summary.json"), nil
	}
	return run, strings.TrimSuffix(run, filepath.Ext(run)) + ".summary.json", nil
}

// loadRun reads the earlier run: its conversation from the transcript, its workspace from the summary (absent
// when it used running servers, whose URLs are given again).
func loadRun(o GoalOptions) (continued, error) {
	var c continued
	var err error
	if c.transcript, c.summary, err = findRun(o.Continue, o.RunsDir); err != nil {
		return c, err
	}
	f, err := os.Open(c.transcript)
	if err != nil {
		return c, fmt.Errorf("-continue: %w", err)
	}
	defer f.Close()
	events, err := loop.ReadTranscript(f)
	if err != nil && len(events) == 0 {
		return c, fmt.Errorf("-continue: %s: %w", c.transcript, err)
	}
	// A run killed mid-write leaves a partial last line: what came before it is complete.
	if c.history, err = loop.Resume(events, o.ToolOutputBytes); err != nil {
		return c, fmt.Errorf("-continue: %s: %w", c.transcript, err)
	}
	// A run killed before its end has no summary: its workspace is then -workspace, as given again.
	var s summary
	b, err := os.ReadFile(c.summary)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &s); err != nil {
			return c, fmt.Errorf("-continue: %s: %w", c.summary, err)
		}
		if s.Workspace == "" && o.FSURL == "" {
			return c, fmt.Errorf("-continue: the run used running servers (no workspace in %s): give -fs-url and -exec-url again", c.summary)
		}
	case !errors.Is(err, os.ErrNotExist):
		return c, fmt.Errorf("-continue: %w", err)
	}
	c.workspace = s.Workspace
	return c, nil
}
