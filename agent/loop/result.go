package loop

// Outcomes of a run.
const (
	// OutcomeMet: the verification command exited 0.
	OutcomeMet = "met"
	// OutcomeNotMet: verification failed, or a limit ended the run before the goal was verified.
	OutcomeNotMet = "not_met"
	// OutcomeUnverified: the model said it was done and there was no verification command to check it.
	OutcomeUnverified = "unverified"
	// OutcomeError: the model server or the sandbox failed; nothing can be said about the goal.
	OutcomeError = "error"
)

// Stop reasons: why the loop ended.
const (
	StopDone         = "done"           // the model answered without a tool call (and verification passed, if any)
	StopMaxTurns     = "max_turns"      // Limits.MaxTurns model calls were made
	StopMaxTokens    = "max_tokens"     // Limits.MaxTokens were used
	StopMaxCost      = "max_cost"       // Limits.MaxCost dollars were spent
	StopTimeout      = "timeout"        // Limits.Timeout (or the caller's deadline) passed
	StopCanceled     = "canceled"       // the caller canceled (Ctrl-C)
	StopModelError   = "model_error"    // the model server failed after its retries
	StopSandboxError = "sandbox_error"  // a tool server failed (not a tool error: the server itself)
	StopInternal     = "internal_error" // the transcript could not be written, a prompt could not be rendered
	StopFormatErrors = "format_errors"  // Limits.MaxFormatErrors replies in a row could not be used
)

// VerifyResult is one run of the verification command.
type VerifyResult struct {
	ExitCode int `json:"exit_code"`
	// TimedOut says the check ran out of time (-verify-timeout) and was killed: its exit code (-1) is the
	// executor's mark of that, not the check's answer.
	TimedOut   bool   `json:"timed_out,omitempty"`
	Output     string `json:"output"`
	DurationMs int64  `json:"duration_ms"`
}

// Result is how a run ended. It is also the summary the command prints and saves.
type Result struct {
	Outcome    string `json:"outcome"`
	StopReason string `json:"stop_reason"`
	// Turns is the number of model replies.
	Turns     int   `json:"turns"`
	TokensIn  int64 `json:"tokens_in"`
	TokensOut int64 `json:"tokens_out"`
	// CostUSD is set when a price is known.
	CostUSD    *float64 `json:"cost_usd,omitempty"`
	Seconds    float64  `json:"seconds"`
	ToolCalls  int      `json:"tool_calls"`
	ToolErrors int      `json:"tool_errors"`
	// VerifyRuns counts runs of the verification command; LastVerify is the latest.
	VerifyRuns int           `json:"verify_runs"`
	LastVerify *VerifyResult `json:"last_verify,omitempty"`
	Model      string        `json:"model"`
	// Error explains an OutcomeError, or the failure a run ended on although its goal was met or not (the model
	// server failing after the work passed its check; the model's unusable replies).
	Error string `json:"error,omitempty"`
	// ModelError is the model server's failure that ended the run, in the provider's words.
	ModelError *ModelError `json:"model_error,omitempty"`
	// TokensEstimated says some token counts were estimated: the server reported no usage for them.
	TokensEstimated bool `json:"tokens_estimated,omitempty"`
	// TokensCached is the part of TokensIn read from the server's prompt cache, where it reports it.
	TokensCached int64 `json:"tokens_cached,omitempty"`
	// Checkpoints says which checkpointed state was the best and whether the run ended by restoring it.
	Checkpoints *CheckpointSummary `json:"checkpoints,omitempty"`
}

// Met says the goal was verified.
func (r Result) Met() bool { return r.Outcome == OutcomeMet }
