package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/goalbox/goalbox/agent/prompts"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// Outcomes of one tool call: the "outcome" of a transcript's tool event, and the progress lines. CallBadArguments
// and CallUnknownTool are the model's mistakes of form (the benchmark counts them as malformed responses).
const (
	CallOK           = "ok"
	CallToolError    = "tool_error"    // the tool itself refused or failed
	CallBadArguments = "bad_arguments" // the model's arguments were not a JSON object
	CallUnknownTool  = "unknown_tool"  // no server offers that name
	CallRefused      = "refused"       // the person at the terminal said no
)

// call runs one tool call and appends its answer to the conversation. Every call gets an answer, even a
// malformed one, because the API requires one per call ID and because the model can only correct what it sees.
// The returned error is the sandbox failing (or the run's context ending); the run stops on it.
func (r *runner) call(ctx context.Context, tc ToolCall) (string, error) {
	t0 := time.Now()
	res, outcome, err := r.dispatch(ctx, tc)
	if err != nil {
		r.event(Event{Type: "error", Turn: r.turns, Call: &tc, Error: err.Error(), DurationMs: ms(t0)})
		return "", err
	}
	r.toolCalls++
	if outcome != CallOK {
		r.toolErrors++
	}
	if outcome != CallBadArguments && outcome != CallUnknownTool && outcome != CallRefused {
		r.dirty = true
	}
	r.noteStart(tc, res, outcome)
	r.noteCall(tc, res, outcome)
	sent, cut := compact(res, r.cfg.Limits.ToolOutputBytes)
	if note := r.keepImages(tc, res); note != "" {
		sent, cut = sent+"\n"+note, true // recorded as sent: the note is not part of the result
	}
	r.msgs = append(r.msgs, Message{Role: RoleTool, ToolCallID: tc.ID, Content: sent})
	r.event(Event{Type: "tool", Turn: r.turns, Call: &tc, Result: recorded(res), Sent: sentIf(sent, cut), Outcome: outcome, DurationMs: ms(t0)})
	return outcome, nil
}

// recorded is res as the transcript keeps it: once. An MCP tool with structured output repeats it as its text
// content, so the text goes when the structure is there (the model is sent the structure too).
func recorded(res ToolResult) *ToolResult {
	if len(res.Structured) > 0 && !res.IsError {
		res.Text = ""
	}
	return &res
}

// sentIf is what the transcript records of what the model was sent: only a cut version, since an uncut one is the
// result itself, compacted (compact makes it again).
func sentIf(sent string, cut bool) string {
	if cut {
		return sent
	}
	return ""
}

// dispatch checks a call and runs it, turning every mistake of the model's into a tool error it can read.
func (r *runner) dispatch(ctx context.Context, tc ToolCall) (ToolResult, string, error) {
	if !r.toolSet[tc.Name] {
		names := make([]string, len(r.tools))
		for i, t := range r.tools {
			names[i] = t.Name
		}
		return toolError("unknown tool %q: the tools are %s", tc.Name, strings.Join(names, ", ")), CallUnknownTool, nil
	}
	args := strings.TrimSpace(tc.Arguments)
	if args == "" {
		args = "{}" // some servers send nothing for a call without arguments
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		msg := "not a JSON object"
		if err != nil {
			msg = err.Error()
		}
		return toolError("the arguments of %s are not valid: %s. Send one JSON object that matches the tool's input schema.", tc.Name, msg), CallBadArguments, nil
	}
	if r.cfg.Approve != nil && (tc.Name == protocol.ToolRunCommand || tc.Name == protocol.ToolStartProcess) {
		var in struct { // both tools name it so: a process's command is asked about as a command's is
			Command string `json:"command"`
		}
		_ = json.Unmarshal([]byte(args), &in)
		ok, reason, err := r.cfg.Approve.Approve(ctx, in.Command)
		if err != nil {
			return ToolResult{}, "", fmt.Errorf("waiting for approval: %w", err)
		}
		if !ok {
			text, err := prompts.Render("refused.md", prompts.Data{Command: in.Command, Output: reason})
			if err != nil {
				return ToolResult{}, "", err
			}
			return ToolResult{IsError: true, Text: text}, CallRefused, nil
		}
	}
	res, err := r.sb.Call(ctx, tc.Name, json.RawMessage(args))
	if err != nil {
		return ToolResult{}, "", err
	}
	if res.IsError {
		return res, CallToolError, nil
	}
	return res, CallOK, nil
}

func toolError(format string, a ...any) ToolResult {
	return ToolResult{IsError: true, Text: fmt.Sprintf(format, a...)}
}

// verify stops the model's processes, then runs the check command in the sandbox. On failure it returns false
// and, with handBack, adds the output to the conversation for the model's next turn.
func (r *runner) verify(ctx context.Context, handBack bool) (bool, error) {
	stopped, err := r.stopProcesses(ctx, StopBeforeVerify)
	if err != nil {
		return false, err
	}
	r.checkpointBeforeVerify(ctx) // checkpoint.go
	t0 := time.Now()
	in := protocol.RunCommandInput{Command: r.cfg.Verify, TimeoutSeconds: int(r.cfg.VerifyTimeout.Seconds())}
	out, res, err := RunCommand(ctx, r.sb, in)
	switch {
	case errors.Is(err, ErrCommandRefused):
		// The executor refused the check itself (a policy, a timeout over its maximum): the model cannot fix that.
		r.event(Event{Type: "error", Turn: r.turns, Command: r.cfg.Verify, Error: "verify: " + res.Text, DurationMs: ms(t0)})
		return false, fmt.Errorf("the executor would not run the -verify command: %s", res.Text)
	case err != nil:
		r.event(Event{Type: "error", Turn: r.turns, Command: r.cfg.Verify, Error: "verify: " + err.Error(), DurationMs: ms(t0)})
		return false, fmt.Errorf("verify: %w", err)
	}
	vr := VerifyResult{ExitCode: out.ExitCode, TimedOut: out.TimedOut, Output: verifyOutput(out), DurationMs: ms(t0)}
	r.verifyRuns++
	r.lastVerify, r.dirty = &vr, false
	r.event(Event{Type: "verify", Turn: r.turns, Command: r.cfg.Verify, Result: &res, ExitCode: &vr.ExitCode, DurationMs: vr.DurationMs})
	regression := r.afterVerify(ctx, vr, handBack && ctx.Err() == nil)
	if vr.ExitCode == 0 {
		return true, nil
	}
	if !handBack || ctx.Err() != nil {
		return false, nil
	}
	text, err := prompts.Render("verify_failed.md", prompts.Data{Command: r.cfg.Verify, ExitCode: vr.ExitCode, TimedOut: vr.TimedOut,
		Output: keepEnds(vr.Output, r.cfg.Limits.ToolOutputBytes), StoppedProcesses: stopped})
	if err != nil {
		return false, err
	}
	if regression != "" {
		text += "\n\n" + regression
	}
	r.add(Message{Role: RoleUser, Content: text})
	return false, nil
}

// verifyOutput is what the model is shown of a failed check.
func verifyOutput(o protocol.RunCommandOutput) string {
	if o.TimedOut {
		return CommandOutput(o) + "\n[the command timed out and was killed]"
	}
	return CommandOutput(o)
}
