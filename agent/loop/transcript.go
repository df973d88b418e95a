package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Event is one line of the transcript. Type says which fields are set:
//
//	start    Model, Goal, Verify, Limits, Price, Tools; Reason "continue" and Turn (the turns before) when the run
//	         continues an earlier one whose events come before it (Resume)
//	message  Turn, Message (the system prompt, the goal, a verification failure handed back)
//	model    Turn, Message (the assistant reply, tool calls included), Usage, TotalUsage, DurationMs, FinishReason,
//	         Outcome (ReplyEmpty, ReplyCut, ReplyUnreadable: a reply the model was told it could not be used)
//	tool     Turn, Call, Result (in full, as the server sent it; its text left out when it repeats the structured
//	         result), Sent (what the model got, when it was cut; else the result compacted), Outcome, DurationMs
//	verify   Turn, Command, Result, ExitCode, DurationMs
//	stop_process  Turn, Call (the agent's own sandbox_stop_process call), Result, Outcome, Command (the process's),
//	              Reason (StopBeforeVerify, StopAtEnd), DurationMs: a process the model left running, stopped by the agent
//	checkpoint  Turn, Call (the agent's own checkpoint, diff or restore call), Result, Reason (CheckpointBeforeVerify,
//	            CheckpointRegression, CheckpointEndOnBest), Error (when it failed; the run goes on), DurationMs
//	elide    Turn, SavedBytes (old outputs replaced in what the model is sent; the transcript keeps them), Reason
//	         ("context_length" when the server said the request was too long, with its words in Error)
//	tool_mode  Turn, Reason (the new mode), Message (the new system prompt), Error (the server's refusal of tools)
//	error    Turn, Error, Call (when a tool call failed), ModelError (when the model server failed, in its words)
//	plan     Turn, Message (the model's plan, as shown; -plan)
//	review   Turn, DurationMs (the workspace was read for the review turn; the diff is in the message after it)
//	end      Summary
type Event struct {
	Type         string      `json:"type"`
	Time         time.Time   `json:"time"`
	Turn         int         `json:"turn,omitempty"`
	Model        string      `json:"model,omitempty"`
	Goal         string      `json:"goal,omitempty"`
	Verify       string      `json:"verify,omitempty"`
	Limits       *Limits     `json:"limits,omitempty"`
	Price        *Price      `json:"price,omitempty"`
	Tools        []Tool      `json:"tools,omitempty"`
	Message      *Message    `json:"message,omitempty"`
	Usage        *Usage      `json:"usage,omitempty"`
	TotalUsage   *Usage      `json:"total_usage,omitempty"`
	FinishReason string      `json:"finish_reason,omitempty"`
	Call         *ToolCall   `json:"call,omitempty"`
	Result       *ToolResult `json:"result,omitempty"`
	Sent         string      `json:"sent,omitempty"`
	Outcome      string      `json:"outcome,omitempty"`
	Command      string      `json:"command,omitempty"`
	ExitCode     *int        `json:"exit_code,omitempty"`
	Reason       string      `json:"reason,omitempty"`
	SavedBytes   int         `json:"saved_bytes,omitempty"`
	DurationMs   int64       `json:"duration_ms,omitempty"`
	Error        string      `json:"error,omitempty"`
	ModelError   *ModelError `json:"model_error,omitempty"`
	Summary      *Result     `json:"summary,omitempty"`
}

// Transcript writes events as JSON lines, each in one Write so that a file on disk is complete up to the last step
// even if the process dies. Nothing is cut: the transcript is the record, the model's view is what gets trimmed.
type Transcript struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
	err error
}

// NewTranscript writes to w (an *os.File is unbuffered, so each event reaches the kernel at once).
func NewTranscript(w io.Writer) *Transcript { return &Transcript{w: w} }

// Observe adds one event, stamping its time if it has none. After a failed write every later one fails with the
// same error.
func (t *Transcript) Observe(ev Event) error {
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	t.buf.Reset()
	enc := json.NewEncoder(&t.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		t.err = fmt.Errorf("transcript: encode %s event: %w", ev.Type, err)
		return t.err
	}
	if _, err := t.w.Write(t.buf.Bytes()); err != nil {
		t.err = fmt.Errorf("transcript: %w", err)
	}
	return t.err
}

// ReadTranscript parses a transcript back into its events.
func ReadTranscript(r io.Reader) ([]Event, error) {
	var out []Event
	d := json.NewDecoder(r)
	for d.More() {
		var ev Event
		if err := d.Decode(&ev); err != nil {
			return out, fmt.Errorf("transcript line %d: %w", len(out)+1, err)
		}
		out = append(out, ev)
	}
	return out, nil
}
