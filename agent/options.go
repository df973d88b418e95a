package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/openaichat"
)

// options is everything the command takes. Each field is read from its environment variable first; a flag given
// on the command line wins. The limits are loop.Limits, embedded so the library and the command share one
// definition and one set of docs.
type options struct {
	// Mode selection: the goal loop is the default; others are added as modes (see run).
	Goal string `env:"GOALBOX_GOAL"`

	// The model.
	Model         string        `env:"GOALBOX_MODEL"`
	BaseURL       string        `env:"OPENAI_BASE_URL"`
	APIKey        string        `env:"OPENAI_API_KEY"` // environment only: a flag would show the key in ps
	Retries       int           `env:"GOALBOX_MODEL_RETRIES"`
	AttemptTimout time.Duration `env:"GOALBOX_MODEL_TIMEOUT"`
	PriceIn       float64       `env:"GOALBOX_PRICE_IN"`
	PriceOut      float64       `env:"GOALBOX_PRICE_OUT"`

	// The sandbox.
	Workspace string `env:"GOALBOX_WORKSPACE"`
	FSURL     string `env:"GOALBOX_FS_URL"`
	ExecURL   string `env:"GOALBOX_EXEC_URL"`
	FSToken   string `env:"GOALBOX_FS_TOKEN"`
	ExecToken string `env:"GOALBOX_EXEC_TOKEN"`

	// The run.
	Verify        string        `env:"GOALBOX_VERIFY"`
	VerifyTimeout time.Duration `env:"GOALBOX_VERIFY_TIMEOUT"`
	Approve       bool          `env:"GOALBOX_APPROVE"`
	Transcript    string        `env:"GOALBOX_TRANSCRIPT"`
	RunsDir       string        `env:"GOALBOX_RUNS_DIR"`
	loop.Limits
	BenchOptions // -benchmarks and -selftest (benchmarks_options.go)
}

func defaultOptions() options {
	return options{
		Model:         "gpt-4.1-mini",
		Retries:       4,
		AttemptTimout: 5 * time.Minute,
		Workspace:     "workspace",
		RunsDir:       "runs",
		VerifyTimeout: 10 * time.Minute,
		Limits:        loop.DefaultLimits(),
		BenchOptions:  defaultBenchOptions(),
	}
}

// errUsage marks a bad command line or environment: exit 2 after the message.
var errUsage = errors.New("usage")

// parseOptions reads environ (the process's environment, or a test's) and then the flags.
func parseOptions(args []string, environ map[string]string, stderr io.Writer) (options, error) {
	o := defaultOptions()
	if err := env.ParseWithOptions(&o, env.Options{Environment: environ}); err != nil {
		return o, fmt.Errorf("%w: %v", errUsage, envError(err))
	}
	fs := flag.NewFlagSet("goalbox-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./agent -goal \"...\" [-verify CMD] [flags]\n\nThe model key comes from OPENAI_API_KEY; OPENAI_BASE_URL (or -base-url) selects any OpenAI-compatible server.\n\nflags (each also read from the environment variable shown):\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.Goal, "goal", o.Goal, "what the agent should achieve (env GOALBOX_GOAL)")
	fs.StringVar(&o.Model, "model", o.Model, "model name (env GOALBOX_MODEL)")
	fs.StringVar(&o.BaseURL, "base-url", o.BaseURL, "OpenAI-compatible API root, e.g. http://localhost:11434/v1 for Ollama (env OPENAI_BASE_URL; default OpenAI)")
	fs.IntVar(&o.Retries, "retries", o.Retries, "retries of a model request on 429, 5xx, connection errors and attempt timeouts (env GOALBOX_MODEL_RETRIES)")
	fs.DurationVar(&o.AttemptTimout, "model-timeout", o.AttemptTimout, "time one model request attempt may take (env GOALBOX_MODEL_TIMEOUT)")
	fs.Float64Var(&o.PriceIn, "price-in", o.PriceIn, "USD per million input tokens; overrides the built-in table (env GOALBOX_PRICE_IN)")
	fs.Float64Var(&o.PriceOut, "price-out", o.PriceOut, "USD per million output tokens; overrides the built-in table (env GOALBOX_PRICE_OUT)")
	fs.StringVar(&o.Workspace, "workspace", o.Workspace, "workspace folder for the in-process servers, created if missing (env GOALBOX_WORKSPACE)")
	fs.StringVar(&o.FSURL, "fs-url", o.FSURL, "MCP endpoint of a running filesystem server; with -exec-url, instead of in-process servers (env GOALBOX_FS_URL)")
	fs.StringVar(&o.ExecURL, "exec-url", o.ExecURL, "MCP endpoint of a running executor server (env GOALBOX_EXEC_URL)")
	fs.Func("token", "bearer token for both servers (prefer env GOALBOX_FS_TOKEN / GOALBOX_EXEC_TOKEN: flags show in ps)", func(s string) error {
		o.FSToken, o.ExecToken = s, s
		return nil
	})
	fs.StringVar(&o.Verify, "verify", o.Verify, "command run in the sandbox when the model stops; the goal is met only if it exits 0 (env GOALBOX_VERIFY)")
	fs.DurationVar(&o.VerifyTimeout, "verify-timeout", o.VerifyTimeout, "time the -verify command may take (env GOALBOX_VERIFY_TIMEOUT)")
	fs.BoolVar(&o.Approve, "approve", o.Approve, "ask on the terminal before each command runs (env GOALBOX_APPROVE)")
	fs.StringVar(&o.Transcript, "transcript", o.Transcript, "transcript file (JSON lines); default <runs-dir>/<time>/transcript.jsonl (env GOALBOX_TRANSCRIPT)")
	fs.StringVar(&o.RunsDir, "runs-dir", o.RunsDir, "folder that gets one sub-folder per run with transcript.jsonl and summary.json (env GOALBOX_RUNS_DIR)")
	fs.IntVar(&o.MaxTurns, "max-turns", o.MaxTurns, "most model calls, 0 for no limit (env GOALBOX_MAX_TURNS)")
	fs.Int64Var(&o.MaxTokens, "max-tokens", o.MaxTokens, "most input+output tokens over the run, 0 for no limit (env GOALBOX_MAX_TOKENS)")
	fs.Float64Var(&o.MaxCost, "max-cost", o.MaxCost, "most USD to spend, 0 for no limit; needs a known price (env GOALBOX_MAX_COST)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "wall-clock limit of the whole run, 0 for none (env GOALBOX_TIMEOUT)")
	fs.IntVar(&o.ToolOutputBytes, "tool-output-bytes", o.ToolOutputBytes, "most bytes of one tool result sent to the model, head and tail kept (env GOALBOX_TOOL_OUTPUT_BYTES)")
	fs.IntVar(&o.ContextBytes, "context-bytes", o.ContextBytes, "conversation size past which old tool outputs are elided, 0 never (env GOALBOX_CONTEXT_BYTES)")
	registerBenchFlags(fs, &o.BenchOptions)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q: every option is a flag (quote the goal: -goal \"...\")", errUsage, fs.Args())
	}
	return o, o.check()
}

// envError names the variable behind each of caarlos0/env's parse errors, which only name the Go field.
func envError(err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	var msgs []string
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			if f, ok := reflect.TypeFor[options]().FieldByName(pe.Name); ok {
				msgs = append(msgs, fmt.Sprintf("environment variable %s: %v (want a %s)", f.Tag.Get("env"), pe.Err, pe.Type))
				continue
			}
		}
		msgs = append(msgs, e.Error())
	}
	return errors.New(strings.Join(msgs, "; "))
}

// check reports option errors that do not depend on anything outside the command line.
func (o options) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
	}
	if o.benchMode() {
		if err := o.BenchOptions.check(o); err != nil {
			return bad("%v", err)
		}
	}
	switch {
	case o.Goal == "" && !o.benchMode():
		return bad("no goal: give -goal \"what to achieve\" (or GOALBOX_GOAL)")
	case (o.FSURL == "") != (o.ExecURL == ""):
		return bad("give both -fs-url and -exec-url (running servers), or neither (servers started in-process over -workspace)")
	case o.FSURL == "" && o.Workspace == "":
		return bad("no workspace: give -workspace DIR")
	case o.Retries < 0:
		return bad("-retries must be 0 or more, got %d", o.Retries)
	case o.PriceIn < 0 || o.PriceOut < 0:
		return bad("-price-in and -price-out must be 0 or more")
	case o.VerifyTimeout < 0:
		return bad("-verify-timeout must be 0 or more")
	}
	if err := o.Limits.Check(o.price()); err != nil {
		return bad("%v", err)
	}
	return nil
}

// price is -price-in/-price-out when either is given, else the built-in table's entry for the model, else unknown.
func (o options) price() loop.Price {
	if o.PriceIn > 0 || o.PriceOut > 0 {
		return loop.Price{InPerMillion: o.PriceIn, OutPerMillion: o.PriceOut}
	}
	p, _ := openaichat.LookupPrice(o.Model)
	return p
}
