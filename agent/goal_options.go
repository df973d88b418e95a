package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/openaichat"
)

// GoalOptions are the goal mode's: one goal, its model, its sandbox and its limits (loop.Limits, embedded so the
// library and the program share one definition and one set of docs; their flags are limitFlags).
type GoalOptions struct {
	Goal     string `env:"GOALBOX_GOAL" flag:"goal" usage:"what the agent should achieve"`
	Continue string `env:"GOALBOX_CONTINUE" flag:"continue" usage:"continue a goal run with the conversation it had: its run folder, its transcript file, or last (the newest in -runs-dir)"`

	ModelOptions
	MaxOutputTokens int    `env:"GOALBOX_MAX_OUTPUT_TOKENS" flag:"max-output-tokens" usage:"most tokens of one model answer (max_tokens), 0 for the server's default"`
	ToolMode        string `env:"GOALBOX_TOOL_MODE" flag:"tool-mode" usage:"how the model calls tools: auto (native, text when the server refuses tools), native, or text (Hermes <tool_call> blocks described in the prompt)"`

	SandboxOptions

	// The run.
	Verify        string        `env:"GOALBOX_VERIFY" flag:"verify" usage:"command run in the sandbox when the model stops; the goal is met only if it exits 0"`
	VerifyTimeout time.Duration `env:"GOALBOX_VERIFY_TIMEOUT" flag:"verify-timeout" usage:"time the -verify command may take"`
	Approve       bool          `env:"GOALBOX_APPROVE" flag:"approve" usage:"ask on the terminal before each command runs"`
	Transcript    string        `env:"GOALBOX_TRANSCRIPT" flag:"transcript" usage:"transcript file (JSON lines); default <runs-dir>/<time>/transcript.jsonl"`
	RunsDir       string        `env:"GOALBOX_RUNS_DIR" flag:"runs-dir" usage:"folder that gets one sub-folder per run with transcript.jsonl and summary.json"`

	// Features off by default, and memory (docs/agent.md: Images, Plan and review, Memory).
	Vision     string `env:"GOALBOX_VISION" flag:"vision" usage:"send images from tools (a chart read with sandbox_read_file) to the model as images: auto (when the model is a known vision model), on, or off"`
	Plan       bool   `env:"GOALBOX_PLAN" flag:"plan" usage:"ask the model for a numbered plan before any tool use, show it (with -approve, wait for a yes) and show progress against it"`
	Review     bool   `env:"GOALBOX_REVIEW" flag:"review" usage:"before the run ends, show the model the workspace's changes since the start to review: it confirms or goes on"`
	NoMemory   bool   `env:"GOALBOX_NO_MEMORY" flag:"no-memory" usage:"neither read nor write the notes of earlier runs in this workspace (AGENTS.md is still read)"`
	MemoryDir  string `env:"GOALBOX_MEMORY_DIR" flag:"memory-dir" usage:"folder of the notes of earlier runs, one sub-folder per workspace; default <user cache dir>/goalbox/memory"`
	MemoryRuns int    `env:"GOALBOX_MEMORY_RUNS" flag:"memory-runs" usage:"how many earlier runs' notes go into the prompt"`

	loop.Limits
}

func defaultGoalOptions() GoalOptions {
	return GoalOptions{
		ModelOptions:   defaultModelOptions(),
		ToolMode:       loop.ToolModeAuto,
		SandboxOptions: defaultSandboxOptions(),
		RunsDir:        "runs",
		VerifyTimeout:  10 * time.Minute,
		Vision:         visionAuto,
		MemoryRuns:     5,
		Limits:         loop.DefaultLimits(),
	}
}

// parseGoalOptions reads environ (the process's environment, or a test's) and then the goal mode's flags.
func parseGoalOptions(args []string, environ map[string]string, stderr io.Writer) (GoalOptions, error) {
	o := defaultGoalOptions()
	if _, err := parseFlags(goalProgram, &o, args, environ, stderr); err != nil {
		return o, err
	}
	if err := o.resolveProtection(); err != nil {
		return o, usageError("%v", err)
	}
	return o, nil
}

// check reports option errors that do not depend on anything outside the command line.
func (o GoalOptions) check() error {
	switch {
	case o.Goal == "" && o.Continue == "":
		return errors.New("no goal: give -goal \"what to achieve\" (or GOALBOX_GOAL), or -continue RUN; go run ./agent -h lists the three programs")
	case o.Goal != "" && o.Continue != "":
		return errors.New("-continue goes on with the earlier run's goal: give -goal or -continue, not both")
	case o.MaxOutputTokens < 0:
		return fmt.Errorf("-max-output-tokens must be 0 (the server's default) or more, got %d", o.MaxOutputTokens)
	case o.ToolMode != loop.ToolModeAuto && o.ToolMode != loop.ToolModeNative && o.ToolMode != loop.ToolModeText:
		return fmt.Errorf("unknown -tool-mode %q: use %s, %s or %s", o.ToolMode, loop.ToolModeAuto, loop.ToolModeNative, loop.ToolModeText)
	case o.VerifyTimeout < 0:
		return errors.New("-verify-timeout must be 0 or more")
	case o.Vision != visionAuto && o.Vision != "on" && o.Vision != "off":
		return fmt.Errorf("unknown -vision %q: use auto (a known vision model), on or off", o.Vision)
	case o.MemoryRuns < 0:
		return fmt.Errorf("-memory-runs must be 0 or more, got %d", o.MemoryRuns)
	}
	return cmp.Or(o.SandboxOptions.check(), o.ModelOptions.check(), o.Limits.Check(o.price())) // the first that fails
}

const visionAuto = "auto"

// vision says whether the model is sent images: -vision on or off, or auto from the built-in list.
func (o GoalOptions) vision() bool {
	if o.Vision == visionAuto {
		return openaichat.TakesImages(o.Model)
	}
	return o.Vision == "on"
}
