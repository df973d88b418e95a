package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/openaichat"
	"github.com/goalbox/goalbox/pkg/envflag"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/execserver/backends"
)

// options is everything the command takes. Each field is read from its environment variable first; a flag given
// on the command line wins (package envflag: the tags give both, and the usage). The limits are loop.Limits,
// embedded so the library and the command share one definition and one set of docs; their flags are limitFlags.
type options struct {
	// Mode selection: the goal loop is the default; others are added as modes (see run).
	Goal string `env:"GOALBOX_GOAL" flag:"goal" usage:"what the agent should achieve"`

	// The model.
	Model           string        `env:"GOALBOX_MODEL" flag:"model" usage:"model name"`
	BaseURL         string        `env:"OPENAI_BASE_URL" flag:"base-url" usage:"OpenAI-compatible API root, e.g. http://localhost:11434/v1 for Ollama; default OpenAI"`
	APIKey          string        `env:"OPENAI_API_KEY"` // environment only: a flag would show the key in ps
	Retries         int           `env:"GOALBOX_MODEL_RETRIES" flag:"retries" usage:"most retries of one model request on 429, 5xx, broken or stalled answers (not on quota, auth or unknown-model errors)"`
	RetryWindow     time.Duration `env:"GOALBOX_RETRY_WINDOW" flag:"retry-window" usage:"most time spent retrying one model request, waits included (they grow to a minute; Retry-After is obeyed), 0 for no bound but -retries"`
	AttemptTimeout  time.Duration `env:"GOALBOX_MODEL_TIMEOUT" flag:"model-timeout" usage:"longest silence of the model server: until its answer starts, then between pieces of it (answers stream)"`
	MaxOutputTokens int           `env:"GOALBOX_MAX_OUTPUT_TOKENS" flag:"max-output-tokens" usage:"most tokens of one model answer (max_tokens), 0 for the server's default"`
	ToolMode        string        `env:"GOALBOX_TOOL_MODE" flag:"tool-mode" usage:"how the model calls tools: auto (native, text when the server refuses tools), native, or text (Hermes <tool_call> blocks described in the prompt)"`
	PriceIn         float64       `env:"GOALBOX_PRICE_IN" flag:"price-in" usage:"USD per million input tokens; overrides the built-in table"`
	PriceOut        float64       `env:"GOALBOX_PRICE_OUT" flag:"price-out" usage:"USD per million output tokens; overrides the built-in table"`
	PriceCached     float64       `env:"GOALBOX_PRICE_CACHED" flag:"price-cached" usage:"USD per million input tokens read from the server's prompt cache, where it reports them; 0 prices them as other input"`

	// The sandbox. The tokens have no flags of their own: -token sets both (registered in parseOptions).
	Workspace string `env:"GOALBOX_WORKSPACE" flag:"workspace" usage:"workspace folder for the in-process servers, created if missing"`
	FSURL     string `env:"GOALBOX_FS_URL" flag:"fs-url" usage:"MCP endpoint of a running filesystem server; with -exec-url, instead of in-process servers"`
	ExecURL   string `env:"GOALBOX_EXEC_URL" flag:"exec-url" usage:"MCP endpoint of a running executor server"`
	FSToken   string `env:"GOALBOX_FS_TOKEN"`
	ExecToken string `env:"GOALBOX_EXEC_TOKEN"`
	// Backend and Image configure the in-process executor, with the executor's own names (-backend, -image and
	// GOALBOX_EXEC_BACKEND, GOALBOX_EXEC_IMAGE) and its automatic choice.
	Backend string `env:"GOALBOX_EXEC_BACKEND" flag:"backend" usage:"in-process executor: where commands run: auto (local where it confines with namespaces, i.e. Linux; else docker when a Docker Engine answers, e.g. Docker Desktop on macOS or Windows), local or docker"`
	Image   string `env:"GOALBOX_EXEC_IMAGE" flag:"image" usage:"in-process executor, docker backend: the image commands run in, never pulled (default goalbox/executor:latest: docker build -f deploy/Dockerfile.exec -t goalbox/executor:latest .)"`
	// Protect and Unprotect adjust the protected project files of both in-process servers, as the servers' own
	// -protect and -unprotect do; their usage is protectFlags.
	Protect    []string              `env:"GOALBOX_PROTECT" envSeparator:"," flag:"protect" flagList:"repeat"`
	Unprotect  []string              `env:"GOALBOX_UNPROTECT" envSeparator:"," flag:"unprotect" flagList:"repeat"`
	protection *pathguard.Protection // from Protect and Unprotect, for the in-process servers
	// NetAllow is the in-process executor's -net-allow (local backend, namespace mode): hosts its commands may reach.
	NetAllow string `env:"GOALBOX_EXEC_NET_ALLOW" flag:"net-allow" usage:"in-process executor: comma-separated hosts, *.domains (either with :port; default ports 80 and 443) and CIDRs commands may reach through the executor's egress proxy; empty: no network"`
	// Secrets are the in-process executor's -secret (either backend): credentials its commands use by placeholder.
	Secrets []string `env:"GOALBOX_EXEC_SECRET" envSeparator:"\n" flag:"secret" flagList:"repeat" usage:"in-process executor: NAME=SOURCE@HOST[,HOST...], repeatable (in the environment one per line): commands see NAME as a placeholder the egress proxy replaces by the value of SOURCE (env:VAR or file:PATH) only in HTTPS requests to HOST"`

	// The run.
	Verify        string        `env:"GOALBOX_VERIFY" flag:"verify" usage:"command run in the sandbox when the model stops; the goal is met only if it exits 0"`
	VerifyTimeout time.Duration `env:"GOALBOX_VERIFY_TIMEOUT" flag:"verify-timeout" usage:"time the -verify command may take"`
	Approve       bool          `env:"GOALBOX_APPROVE" flag:"approve" usage:"ask on the terminal before each command runs"`
	Transcript    string        `env:"GOALBOX_TRANSCRIPT" flag:"transcript" usage:"transcript file (JSON lines); default <runs-dir>/<time>/transcript.jsonl"`
	RunsDir       string        `env:"GOALBOX_RUNS_DIR" flag:"runs-dir" usage:"folder that gets one sub-folder per run with transcript.jsonl and summary.json"`
	Continue      string        `env:"GOALBOX_CONTINUE" flag:"continue" usage:"continue a goal run with the conversation it had: its run folder, its transcript file, or last (the newest in -runs-dir)"`

	// Features off by default, and memory (docs/agent.md: Images, Plan and review, Memory).
	Vision     string `env:"GOALBOX_VISION" flag:"vision" usage:"send images from tools (a chart read with sandbox_read_file) to the model as images: auto (when the model is a known vision model), on, or off"`
	Plan       bool   `env:"GOALBOX_PLAN" flag:"plan" usage:"ask the model for a numbered plan before any tool use, show it (with -approve, wait for a yes) and show progress against it"`
	Review     bool   `env:"GOALBOX_REVIEW" flag:"review" usage:"before the run ends, show the model the workspace's changes since the start to review: it confirms or goes on"`
	NoMemory   bool   `env:"GOALBOX_NO_MEMORY" flag:"no-memory" usage:"neither read nor write the notes of earlier runs in this workspace (AGENTS.md is still read)"`
	MemoryDir  string `env:"GOALBOX_MEMORY_DIR" flag:"memory-dir" usage:"folder of the notes of earlier runs, one sub-folder per workspace; default <user cache dir>/goalbox/memory"`
	MemoryRuns int    `env:"GOALBOX_MEMORY_RUNS" flag:"memory-runs" usage:"how many earlier runs' notes go into the prompt"`
	loop.Limits
	BenchOptions // -benchmarks and -selftest (benchmarks_options.go)
}

// limitFlags are the flags of loop.Limits, whose struct belongs to the loop and carries only its env tags.
var limitFlags = map[string]envflag.Doc{
	"MaxTurns":        {Flag: "max-turns", Usage: "most model calls, 0 for no limit"},
	"MaxTokens":       {Flag: "max-tokens", Usage: "most input+output tokens over the run, 0 for no limit"},
	"MaxCost":         {Flag: "max-cost", Usage: "most USD to spend, 0 for no limit; needs a known price"},
	"Timeout":         {Flag: "timeout", Usage: "wall-clock limit of the whole run, 0 for none"},
	"ToolOutputBytes": {Flag: "tool-output-bytes", Usage: "most bytes of one tool result sent to the model, head and tail kept"},
	"ContextBytes":    {Flag: "context-bytes", Usage: "most bytes of one model request (schemas, messages, latest results); past it old outputs are elided in one large step, 0 never"},
	"MaxFormatErrors": {Flag: "max-format-errors", Usage: "unusable model replies in a row (empty, cut off, unreadable or only malformed calls) that end the run, 0 for no limit"},
}

// protectFlags are the usage of -protect and -unprotect: the servers' text, said of both in-process servers.
var protectFlags = map[string]envflag.Doc{
	"Protect":   {Flag: "protect", Usage: "in-process servers: " + pathguard.ProtectUsage},
	"Unprotect": {Flag: "unprotect", Usage: "in-process servers: " + pathguard.UnprotectUsage()},
}

func defaultOptions() options {
	return options{
		Model:          "gpt-4.1-mini",
		Retries:        10,
		RetryWindow:    90 * time.Second,
		AttemptTimeout: 5 * time.Minute,
		ToolMode:       loop.ToolModeAuto,
		Workspace:      "workspace",
		Backend:        backends.Auto,
		RunsDir:        "runs",
		VerifyTimeout:  10 * time.Minute,
		Vision:         visionAuto,
		MemoryRuns:     5,
		Limits:         loop.DefaultLimits(),
		BenchOptions:   defaultBenchOptions(),
	}
}

// errUsage marks a bad command line or environment: exit 2 after the message.
var errUsage = errors.New("usage")

// parseOptions reads environ (the process's environment, or a test's) and then the flags.
func parseOptions(args []string, environ map[string]string, stderr io.Writer) (options, error) {
	o := defaultOptions()
	docs := maps.Clone(limitFlags)
	maps.Copy(docs, protectFlags)
	eo := envflag.Options{Environment: environ, Docs: docs}
	if err := envflag.ParseEnv(&o, eo); err != nil {
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	fs := flag.NewFlagSet("goalbox-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./agent -goal \"...\" [-verify CMD] [flags]\n\nThe model key comes from OPENAI_API_KEY; OPENAI_BASE_URL (or -base-url) selects any OpenAI-compatible server.\n\nflags (each also read from the environment variable shown):\n")
		fs.PrintDefaults()
	}
	envflag.Register(fs, &o, eo)
	fs.Func("token", "bearer token for both servers (prefer env GOALBOX_FS_TOKEN / GOALBOX_EXEC_TOKEN: flags show in ps)", func(s string) error {
		o.FSToken, o.ExecToken = s, s
		return nil
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "threads" {
			o.threadsGiven = true
		}
	})
	if environ["GOALBOX_THREADS"] != "" {
		o.threadsGiven = true
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q: every option is a flag (quote the goal: -goal \"...\")", errUsage, fs.Args())
	}
	if err := o.check(); err != nil {
		return o, err
	}
	p, err := pathguard.ParseProtection(o.Protect, o.Unprotect)
	if err != nil {
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	o.protection = p
	return o, nil
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
	case o.SandboxPool != "" && !o.benchMode():
		return bad("-sandbox-pool belongs to -benchmarks and -selftest; the goal mode takes one sandbox's -fs-url and -exec-url")
	case o.Goal == "" && o.Continue == "" && !o.benchMode():
		return bad("no goal: give -goal \"what to achieve\" (or GOALBOX_GOAL), or -continue RUN")
	case o.Goal != "" && o.Continue != "":
		return bad("-continue goes on with the earlier run's goal: give -goal or -continue, not both")
	case (o.FSURL == "") != (o.ExecURL == ""):
		return bad("give both -fs-url and -exec-url (running servers), or neither (servers started in-process over -workspace)")
	case o.FSURL == "" && o.Workspace == "":
		return bad("no workspace: give -workspace DIR")
	case (len(o.Protect) > 0 || len(o.Unprotect) > 0) && (o.FSURL != "" || o.benchMode()):
		// Said rather than ignored: a person who asked for more protection must not believe they have it.
		return bad("-protect and -unprotect configure the goal mode's in-process servers; running servers (-fs-url, -exec-url) take their own -protect and -unprotect, and the benchmark's sandboxes keep the defaults")
	case o.Backend != backends.Auto && o.Backend != backends.Local && o.Backend != backends.Docker:
		return bad("unknown backend %q: use %s", o.Backend, backends.Names)
	case o.Retries < 0:
		return bad("-retries must be 0 or more, got %d", o.Retries)
	case o.RetryWindow < 0 || o.AttemptTimeout < 0:
		return bad("-retry-window and -model-timeout must be 0 or more")
	case o.MaxOutputTokens < 0:
		return bad("-max-output-tokens must be 0 (the server's default) or more, got %d", o.MaxOutputTokens)
	case o.ToolMode != loop.ToolModeAuto && o.ToolMode != loop.ToolModeNative && o.ToolMode != loop.ToolModeText:
		return bad("unknown -tool-mode %q: use %s, %s or %s", o.ToolMode, loop.ToolModeAuto, loop.ToolModeNative, loop.ToolModeText)
	case o.PriceIn < 0 || o.PriceOut < 0 || o.PriceCached < 0:
		return bad("-price-in, -price-out and -price-cached must be 0 or more")
	case o.VerifyTimeout < 0:
		return bad("-verify-timeout must be 0 or more")
	case o.Vision != visionAuto && o.Vision != "on" && o.Vision != "off":
		return bad("unknown -vision %q: use auto (a known vision model), on or off", o.Vision)
	case o.MemoryRuns < 0:
		return bad("-memory-runs must be 0 or more, got %d", o.MemoryRuns)
	}
	if err := o.Limits.Check(o.price()); err != nil {
		return bad("%v", err)
	}
	return nil
}

// price is -price-in/-price-out when either is given, else the built-in table's entry for the model, else unknown.
func (o options) price() loop.Price {
	if o.PriceIn > 0 || o.PriceOut > 0 {
		return loop.Price{InPerMillion: o.PriceIn, OutPerMillion: o.PriceOut, CachedInPerMillion: o.PriceCached}
	}
	p, _ := openaichat.LookupPrice(o.Model)
	return p
}

const visionAuto = "auto"

// vision says whether the model is sent images: -vision on or off, or auto from the built-in list.
func (o options) vision() bool {
	if o.Vision == visionAuto {
		return openaichat.TakesImages(o.Model)
	}
	return o.Vision == "on"
}
