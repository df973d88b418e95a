package loop

import (
	"fmt"
	"time"
)

// Limits end a run. Each is checked before every model call; a zero value means "no limit" except where said.
// The env tags are read by the command with caarlos0/env (flags win); library callers fill the struct directly.
type Limits struct {
	// MaxTurns is the most model calls in a run. A turn is one model reply and the tool calls it asked for.
	MaxTurns int `env:"GOALBOX_MAX_TURNS"`
	// MaxTokens is the most prompt+completion tokens over the whole run, as the model server reports them. The
	// reply that crosses it still has its tool calls run; no further model call is made.
	MaxTokens int64 `env:"GOALBOX_MAX_TOKENS"`
	// MaxCost is the most US dollars to spend, computed from the token counts and Price. It needs a known price.
	MaxCost float64 `env:"GOALBOX_MAX_COST"`
	// Timeout bounds the whole run's wall-clock time, model calls, commands and verification included.
	Timeout time.Duration `env:"GOALBOX_TIMEOUT"`
	// ToolOutputBytes is the most bytes of one tool result the model is sent (head and tail kept). Required (> 0).
	ToolOutputBytes int `env:"GOALBOX_TOOL_OUTPUT_BYTES"`
	// ContextBytes bounds each request as sent: the tool schemas, every message and the latest turn's results.
	// Past it, old tool outputs, old check outputs and old call arguments are elided, in one large step (down to
	// ContextLowWater of it) so that the requests after it share their prefix for the server's prompt cache.
	// 0 never elides.
	ContextBytes int `env:"GOALBOX_CONTEXT_BYTES"`
	// MaxFormatErrors ends the run after this many model replies in a row that could not be used: empty,
	// cut off, tool calls that could not be read, or only malformed calls. 0 means no such limit.
	MaxFormatErrors int `env:"GOALBOX_MAX_FORMAT_ERRORS"`
}

// DefaultLimits are the command's defaults: generous enough for an exercise, small enough that a confused model
// cannot run up a large bill unnoticed.
func DefaultLimits() Limits {
	return Limits{
		MaxTurns:        50,
		MaxTokens:       2_000_000,
		Timeout:         30 * time.Minute,
		ToolOutputBytes: 16 << 10,
		ContextBytes:    400_000,
		MaxFormatErrors: 3,
	}
}

// Check says what is wrong with l, if anything.
func (l Limits) Check(price Price) error {
	switch {
	case l.MaxTurns < 0:
		return fmt.Errorf("max turns must be 0 (no limit) or more, got %d", l.MaxTurns)
	case l.MaxTokens < 0:
		return fmt.Errorf("max tokens must be 0 (no limit) or more, got %d", l.MaxTokens)
	case l.MaxCost < 0:
		return fmt.Errorf("max cost must be 0 (no limit) or more, got %g", l.MaxCost)
	case l.Timeout < 0:
		return fmt.Errorf("timeout must be 0 (none) or more, got %s", l.Timeout)
	case l.ToolOutputBytes <= 0:
		return fmt.Errorf("tool output budget must be positive, got %d", l.ToolOutputBytes)
	case l.ContextBytes < 0:
		return fmt.Errorf("context budget must be 0 (never elide) or more, got %d", l.ContextBytes)
	case l.ContextBytes > 0 && l.ContextBytes < minContextBytes:
		return fmt.Errorf("context budget must be 0 (never elide) or at least %d bytes (the system prompt and the tool schemas alone are about 15 KB), got %d", minContextBytes, l.ContextBytes)
	case l.MaxFormatErrors < 0:
		return fmt.Errorf("max format errors must be 0 (no limit) or more, got %d", l.MaxFormatErrors)
	case l.MaxCost > 0 && !price.Known():
		return fmt.Errorf("a cost limit needs a price: this model is not in the built-in table, give -price-in and -price-out (USD per million tokens)")
	}
	return nil
}

// Config is one run of the loop.
type Config struct {
	// Goal is what the user wants, sent as the first user message.
	Goal string
	// Verify, when set, is the shell command that decides success: it is run through the sandbox's command tool
	// when the model stops, and the goal is met only when it exits 0.
	Verify string
	// VerifyTimeout bounds one verification run (0: the executor's default).
	VerifyTimeout time.Duration
	Limits        Limits
	// Price turns tokens into dollars; the zero Price means unknown (cost is not reported).
	Price Price
	// Approve, when set, is asked before each command runs; a refusal goes back to the model as a tool error.
	Approve Approver
	// Observers hear every event of the run: a Transcript keeps them in full, a Progress prints a line per step.
	Observers []Observer
	// ToolMode is how tools reach the model: ToolModeAuto (the default, ""), ToolModeNative or ToolModeText.
	ToolMode string
	// History, when set, is an earlier run's conversation to continue (Resume); Goal and Verify should be its own.
	// The limits apply to the new turns alone.
	History *History

	// Vision sends the images in tool results (sandbox_read_file of a PNG, JPEG, GIF or WebP) to the model as
	// image parts, within the context budget (images.go). Off, the model gets the result's JSON and a note.
	Vision bool
	// Plan asks the model for a numbered plan before any tool use, keeps it at the head of the conversation and
	// shows progress against it (plan.go). With an Approve that is also a PlanApprover, the plan waits for a yes.
	Plan bool
	// Review adds a review turn before the run ends: the model is shown the diff of the workspace since the run
	// began and either confirms or goes on (review.go).
	Review bool
	// Instructions are the project's own instructions (its AGENTS.md), put into the system prompt as they are.
	Instructions string
	// Memory is what the agent remembers of earlier runs in this workspace, rendered (memory.md); it goes into
	// the system prompt.
	Memory string
}

// Tool modes.
const (
	// ToolModeAuto uses native tool calls and switches to text when the server says it has none.
	ToolModeAuto = "auto"
	// ToolModeNative uses native tool calls only: a server without them ends the run.
	ToolModeNative = "native"
	// ToolModeText describes the tools in the system prompt and reads Hermes <tool_call> blocks (textcalls.go).
	ToolModeText = "text"
)

// minContextBytes is the smallest context budget accepted: below it the fixed part of a request cannot fit.
const minContextBytes = 24_000
