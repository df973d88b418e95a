package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/openaichat"
	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/assemble"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker"
)

// summary is summary.json: the loop's result and where to find the rest.
type summary struct {
	loop.Result
	Goal       string `json:"goal"`
	Verify     string `json:"verify,omitempty"`
	Transcript string `json:"transcript"`
	Workspace  string `json:"workspace,omitempty"`
}

// runGoal pursues o.Goal and returns the exit status.
func runGoal(ctx context.Context, o GoalOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	client := o.client()
	client.MaxOutputTokens = o.MaxOutputTokens
	note := func(msg string) { fmt.Fprintf(stderr, "        %s\n", msg) }
	client.OnFailedAttempt, client.OnProgress, client.ProgressEvery = note, note, 15*time.Second
	client.OnText = (&textEcho{w: stderr}).write
	model, err := openaichat.New(client)
	if err != nil {
		return failed(stderr, "%v", err)
	}
	var history *loop.History
	var transcriptPath, summaryPath string
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if o.Continue != "" {
		c, err := loadRun(o)
		if err != nil {
			return failed(stderr, "%v", err)
		}
		history, transcriptPath, summaryPath, flags = c.history, c.transcript, c.summary, os.O_WRONLY|os.O_APPEND
		o.Goal = history.Goal
		o.Verify = cmp.Or(o.Verify, history.Verify)
		if c.workspace != "" && o.FSURL == "" {
			o.Workspace = c.workspace
		}
		fmt.Fprintf(stderr, "agent: continuing %s after %d turn(s) in %s\n", transcriptPath, history.Turns, o.Workspace)
	} else if transcriptPath, summaryPath, err = runFiles(o); err != nil {
		return failed(stderr, "%v", err)
	}
	tf, err := os.OpenFile(transcriptPath, flags, 0o600)
	if err != nil {
		return failed(stderr, "transcript: %v", err)
	}
	defer tf.Close()

	sb, workspace, closeSandbox, err := openSandbox(ctx, o, stderr)
	// Interrupted while the run was being set up: an interrupt, not a configuration error, and with its summary.
	interruptedAtStart := func(err error) int {
		sum := summary{Result: loop.Result{Outcome: loop.OutcomeNotMet, StopReason: loop.StopCanceled, Model: o.Model,
			Error: "interrupted before the model was asked: " + err.Error()}, Goal: o.Goal, Verify: o.Verify, Transcript: transcriptPath, Workspace: o.Workspace}
		if err := writeJSON(summaryPath, sum); err != nil {
			fmt.Fprintf(stderr, "agent: summary: %v\n", err)
		}
		printSummary(stdout, sum, summaryPath)
		return exitInterrupted
	}
	if err != nil && ctx.Err() != nil {
		return interruptedAtStart(err)
	}
	if err != nil {
		return failed(stderr, "%v", err)
	}
	defer closeSandbox()

	cfg := loop.Config{Goal: o.Goal, Verify: o.Verify, VerifyTimeout: o.VerifyTimeout, Limits: o.Limits, Price: o.price(),
		Observers: []loop.Observer{loop.NewTranscript(tf), loop.NewProgress(stderr)}, ToolMode: o.ToolMode, History: history,
		Vision: o.vision(), Plan: o.Plan, Review: o.Review}
	if o.Approve {
		cfg.Approve = loop.NewTerminalApprover(stdin, stderr)
	}
	mem, err := openMemory(o, workspace)
	if err == nil {
		err = mem.configure(ctx, &cfg, sb, stderr)
	}
	if err != nil && ctx.Err() != nil {
		return interruptedAtStart(err)
	}
	if err != nil {
		return failed(stderr, "%v", err)
	}
	fmt.Fprintf(stderr, "agent: model %s, transcript %s\n", o.Model, transcriptPath)
	res, runErr := loop.Run(ctx, cfg, model, sb)

	if err := mem.save(o.Goal, o.Verify, res); err != nil {
		fmt.Fprintf(stderr, "agent: notes for the next run: %v\n", err)
	}
	sum := summary{Result: res, Goal: o.Goal, Verify: o.Verify, Transcript: transcriptPath, Workspace: workspace}
	if err := writeJSON(summaryPath, sum); err != nil {
		fmt.Fprintf(stderr, "agent: summary: %v\n", err)
	}
	printSummary(stdout, sum, summaryPath)
	switch {
	case res.StopReason == loop.StopCanceled && ctx.Err() != nil:
		return exitInterrupted
	case runErr != nil || res.Outcome == loop.OutcomeError:
		fmt.Fprintf(stderr, "agent: %v\n", runErr)
		return exitError
	case res.Met():
		return exitMet
	}
	return exitNotMet
}

// openSandbox connects to the running servers named by the options, or starts both in-process over the workspace.
func openSandbox(ctx context.Context, o GoalOptions, stderr io.Writer) (loop.Sandbox, string, func(), error) {
	showProgress := func(c *sandbox.Client) {
		c.OnProgress(func(tool, msg string) { fmt.Fprintf(stderr, "        %s: %s\n", tool, msg) })
	}
	if o.FSURL != "" {
		c, err := sandbox.Connect(ctx, sandbox.Endpoint{URL: o.FSURL, Token: o.FSToken}, sandbox.Endpoint{URL: o.ExecURL, Token: o.ExecToken})
		if err != nil {
			return nil, "", nil, err
		}
		showProgress(c)
		return c, "", func() { c.Close() }, nil
	}
	ws, err := filepath.Abs(o.Workspace)
	if err != nil {
		return nil, "", nil, fmt.Errorf("workspace: %w", err)
	}
	h, err := sandbox.Host(ctx, sandbox.LocalOptions{Workspace: ws, Protection: o.protection, Executor: assemble.Options{
		Backend: o.Backend, Docker: docker.Config{Image: o.Image}, Network: assemble.Network{Allow: o.NetAllow, Secrets: o.Secrets}}},
		goalExecutorBuild...)
	if err != nil {
		return nil, "", nil, err
	}
	showProgress(h.Client)
	c := h.Local.Choice
	fmt.Fprintf(stderr, "agent: sandbox in-process over %s; commands: backend %s (%s: %s); %s\n", ws, c.Backend, c.Requested, c.Reason,
		confinementNote(h.Local.Health()))
	return h, ws, func() { h.Close() }, nil
}

// goalExecutorBuild changes how the in-process executor is built: tests make its local backend fail, as it does
// on macOS and Windows.
var goalExecutorBuild []assemble.Option

// runFiles picks the transcript and summary paths: -transcript FILE puts the summary beside it as
// FILE-without-extension.summary.json; otherwise both go into a new folder <runs-dir>/<UTC time>.
func runFiles(o GoalOptions) (transcript, summary string, err error) {
	if o.Transcript != "" {
		if err := os.MkdirAll(filepath.Dir(o.Transcript), 0o755); err != nil {
			return "", "", fmt.Errorf("transcript folder: %w", err)
		}
		return o.Transcript, strings.TrimSuffix(o.Transcript, filepath.Ext(o.Transcript)) + ".summary.json", nil
	}
	if err := os.MkdirAll(o.RunsDir, 0o755); err != nil {
		return "", "", fmt.Errorf("runs folder: %w", err)
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for i := 1; ; i++ {
		name := stamp
		if i > 1 {
			name = fmt.Sprintf("%s-%d", stamp, i)
		}
		dir := filepath.Join(o.RunsDir, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return filepath.Join(dir, "transcript.jsonl"), filepath.Join(dir, "summary.json"), nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", "", fmt.Errorf("run folder: %w", err)
		}
	}
}

// writeJSON writes v indented to path, making its folder when it is missing.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func printSummary(w io.Writer, s summary, path string) {
	verdict := map[string]string{
		loop.OutcomeMet:        "goal met (verified)",
		loop.OutcomeNotMet:     "goal NOT met",
		loop.OutcomeUnverified: "completed (unverified: give -verify CMD to check the goal)",
		loop.OutcomeError:      "error",
	}[s.Outcome]
	fmt.Fprintf(w, "%s\n  stop reason  %s\n  turns        %d\n  tokens       %d in, %d out", verdict, s.StopReason, s.Turns, s.TokensIn, s.TokensOut)
	if s.TokensCached > 0 {
		fmt.Fprintf(w, " (%d in from the prompt cache)", s.TokensCached)
	}
	if s.TokensEstimated {
		fmt.Fprint(w, " (partly estimated: the server reported no usage)")
	}
	fmt.Fprintln(w)
	if s.CostUSD != nil {
		fmt.Fprintf(w, "  cost         $%.4f\n", *s.CostUSD)
	} else {
		fmt.Fprintf(w, "  cost         unknown (no price for %s: give -price-in/-price-out)\n", s.Model)
	}
	fmt.Fprintf(w, "  seconds      %.1f\n", s.Seconds)
	if s.LastVerify != nil {
		check := fmt.Sprintf("exit %d", s.LastVerify.ExitCode)
		if s.LastVerify.TimedOut {
			check = "timed out (-verify-timeout)"
		}
		fmt.Fprintf(w, "  verify       %s after %d run(s)\n", check, s.VerifyRuns)
	}
	if c := s.Checkpoints; c != nil && c.Best != "" {
		switch {
		case c.Restored:
			fmt.Fprintf(w, "  best state   %s (%s), restored: the workspace is left in it; the last state is %s\n", c.Best, c.BestTests, c.SavedAs)
		case c.RestoreError != "":
			fmt.Fprintf(w, "  best state   %s (%s), NOT restored: %s\n", c.Best, c.BestTests, c.RestoreError)
		default:
			fmt.Fprintf(w, "  best state   %s (%s)\n", c.Best, c.BestTests)
		}
	}
	if s.Error != "" {
		fmt.Fprintf(w, "  error        %s\n", s.Error)
	}
	if e := s.ModelError; e != nil && e.Hint != "" && !strings.Contains(s.Error, e.Hint) {
		fmt.Fprintf(w, "  hint         %s\n", e.Hint)
	}
	fmt.Fprintf(w, "  transcript   %s\n  summary      %s\n", s.Transcript, path)
}

// confinementNote is the one-line gist of the executor's confinement report.
func confinementNote(health map[string]any) string {
	exec, _ := health["executor"].(protocol.ExecutorHealth)
	local := exec.Confinement.LocalConfinement
	if d := exec.Confinement.DockerConfinement; local == nil && d != nil {
		return fmt.Sprintf("image=%s, user=%s, network=%s", d.Image, d.User, exec.Confinement.Network)
	}
	if local == nil {
		return "backend " + exec.Backend
	}
	parts := []string{fmt.Sprintf("mode=%s", local.Mode), fmt.Sprintf("landlock=%s", local.Landlock), fmt.Sprintf("network=%s", exec.Confinement.Network)}
	if len(local.Warnings) > 0 {
		parts = append(parts, fmt.Sprintf("WARNINGS=%v", local.Warnings))
	}
	return strings.Join(parts, ", ")
}

// textEcho shows the model's text as it streams, each line indented and marked under the progress lines.
type textEcho struct {
	w       io.Writer
	midLine bool
}

func (e *textEcho) write(piece string) {
	for piece != "" {
		if !e.midLine {
			fmt.Fprint(e.w, "        > ")
			e.midLine = true
		}
		line, rest, nl := strings.Cut(piece, "\n")
		fmt.Fprint(e.w, line)
		if nl {
			fmt.Fprint(e.w, "\n")
			e.midLine = false
		}
		piece = rest
	}
}
