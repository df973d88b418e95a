package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/openaichat"
	"github.com/goalbox/goalbox/pkg/envflag"
	"github.com/goalbox/goalbox/pkg/pathguard"
)

// The parts of the programs' options that more than one program takes, each defined once and embedded by the
// programs that take it (goal_options.go, benchmarks_options.go). Each field is read from its environment variable
// first; a flag given on the command line wins (package envflag: the tags give both, and the usage).

// ModelOptions are the model client's settings, for the programs that ask a model.
type ModelOptions struct {
	Model          string        `env:"GOALBOX_MODEL" flag:"model" usage:"model name"`
	BaseURL        string        `env:"OPENAI_BASE_URL" flag:"base-url" usage:"OpenAI-compatible API root, e.g. http://localhost:11434/v1 for Ollama; default OpenAI"`
	APIKey         string        `env:"OPENAI_API_KEY"` // environment only: a flag would show the key in ps
	Retries        int           `env:"GOALBOX_MODEL_RETRIES" flag:"retries" usage:"most retries of one model request on 429, 5xx, broken or stalled answers (not on quota, auth or unknown-model errors)"`
	RetryWindow    time.Duration `env:"GOALBOX_RETRY_WINDOW" flag:"retry-window" usage:"most time spent retrying one model request, waits included (they grow to a minute; Retry-After is obeyed), 0 for no bound but -retries"`
	AttemptTimeout time.Duration `env:"GOALBOX_MODEL_TIMEOUT" flag:"model-timeout" usage:"longest silence of the model server: until its answer starts, then between pieces of it (answers stream; keep-alive comments are silence)"`
	PriceIn        float64       `env:"GOALBOX_PRICE_IN" flag:"price-in" usage:"USD per million input tokens; overrides the built-in table"`
	PriceOut       float64       `env:"GOALBOX_PRICE_OUT" flag:"price-out" usage:"USD per million output tokens; overrides the built-in table"`
	PriceCached    float64       `env:"GOALBOX_PRICE_CACHED" flag:"price-cached" usage:"USD per million input tokens read from the server's prompt cache, where it reports them; 0 prices them as other input"`
}

func defaultModelOptions() ModelOptions {
	return ModelOptions{Model: "gpt-4.1-mini", Retries: 10, RetryWindow: 90 * time.Second, AttemptTimeout: 5 * time.Minute}
}

func (m ModelOptions) check() error {
	switch {
	case m.Retries < 0:
		return fmt.Errorf("-retries must be 0 or more, got %d", m.Retries)
	case m.RetryWindow < 0 || m.AttemptTimeout < 0:
		return errors.New("-retry-window and -model-timeout must be 0 or more")
	case m.PriceIn < 0 || m.PriceOut < 0 || m.PriceCached < 0:
		return errors.New("-price-in, -price-out and -price-cached must be 0 or more")
	}
	return nil
}

// client is the model client's configuration; a program adds what only it sets.
func (m ModelOptions) client() openaichat.Config {
	return openaichat.Config{Model: m.Model, BaseURL: m.BaseURL, APIKey: m.APIKey,
		MaxRetries: m.Retries, RetryWindow: m.RetryWindow, RequestTimeout: m.AttemptTimeout}
}

// price is -price-in/-price-out when either is given, else the built-in table's entry for the model, else unknown.
func (m ModelOptions) price() loop.Price {
	if m.PriceIn > 0 || m.PriceOut > 0 {
		return loop.Price{InPerMillion: m.PriceIn, OutPerMillion: m.PriceOut, CachedInPerMillion: m.PriceCached}
	}
	p, _ := openaichat.LookupPrice(m.Model)
	return p
}

// ServerTokens are the bearer tokens of running servers: the goal mode's -fs-url and -exec-url, the benchmark's
// pool. They have no flags of their own: -token sets both.
type ServerTokens struct {
	FSToken   string `env:"GOALBOX_FS_TOKEN"`
	ExecToken string `env:"GOALBOX_EXEC_TOKEN"`
}

// serverTokens gives the flag set -token for every program's options that embed ServerTokens.
func (t *ServerTokens) serverTokens() *ServerTokens { return t }

// registerToken adds -token, which sets both tokens.
func (t *ServerTokens) registerToken(fs *flag.FlagSet) {
	fs.Func("token", "bearer token for both servers (prefer env GOALBOX_FS_TOKEN / GOALBOX_EXEC_TOKEN: flags show in ps)", func(s string) error {
		t.FSToken, t.ExecToken = s, s
		return nil
	})
}

// limitFlags are the flags of loop.Limits, whose struct belongs to the loop and carries only its env tags: the
// library and the programs share one definition and one set of docs.
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

// fieldDocs are the flags of fields whose structs carry only env tags, for every program.
var fieldDocs = func() map[string]envflag.Doc {
	docs := maps.Clone(limitFlags)
	maps.Copy(docs, protectFlags)
	return docs
}()

// errUsage marks a bad command line or environment: exit 2 after the message.
var errUsage = errors.New("usage")

// usageError is an errUsage with its message.
func usageError(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
}
