package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// The model's background processes (sandbox_start_process). The loop stops every one still running before each
// verification, because a dev server left up could hold a port the check needs or answer in place of the code
// under test, and before the run ends, so that none outlives it. The executor's own list says which are still
// running; the run's record of what it started says which are its own, so a sandbox shared with another run loses
// nothing to this one.

// Why the agent stopped a process: the Reason of a stop_process event.
const (
	StopBeforeVerify = "before_verify"
	StopAtEnd        = "at_end"
)

// stopGraceSeconds is the grace between SIGTERM and SIGKILL for the agent's own stops: a server exits on SIGTERM at
// once, and a stubborn one must not hold up a check (or an interrupted run) for the executor's default 5 s each.
const stopGraceSeconds = 2

// endCleanupTimeout bounds the stops at the end of a run whose own deadline or cancel already passed.
const endCleanupTimeout = 30 * time.Second

// startedProcess is a process the model started in this run and the agent has not yet seen end.
type startedProcess struct {
	id, command string
}

// noteStart remembers the process a successful sandbox_start_process call started.
func (r *runner) noteStart(tc ToolCall, res ToolResult, outcome string) {
	if tc.Name != protocol.ToolStartProcess || outcome != CallOK {
		return
	}
	var in protocol.StartProcessInput
	var out protocol.StartProcessOutput
	_ = json.Unmarshal([]byte(tc.Arguments), &in)
	if json.Unmarshal(res.Structured, &out) == nil && out.ProcessID != "" {
		r.started = append(r.started, startedProcess{id: out.ProcessID, command: in.Command})
	}
}

// stopProcesses stops the model's processes that are still running, recording each stop as an event, and returns
// them as "id (command)" for the model. The error is the sandbox failing; a stop the executor refuses (the process
// ended in between) is recorded and not an error.
func (r *runner) stopProcesses(ctx context.Context, reason string) ([]string, error) {
	if len(r.started) == 0 {
		return nil, nil
	}
	t0 := time.Now()
	call := ToolCall{Name: protocol.ToolListProcesses, Arguments: "{}"}
	list, err := r.sb.Call(ctx, call.Name, json.RawMessage(call.Arguments))
	var listed protocol.ListProcessesOutput
	if err == nil && (list.IsError || json.Unmarshal(list.Structured, &listed) != nil) {
		err = fmt.Errorf("%s answered without the list: %s", call.Name, list.Text)
	}
	if err != nil {
		r.event(Event{Type: "error", Turn: r.turns, Call: &call, Error: "stopping the model's processes: " + err.Error(), DurationMs: ms(t0)})
		return nil, fmt.Errorf("stopping the model's processes: %w", err)
	}
	running := map[string]bool{}
	for _, p := range listed.Processes {
		running[p.ProcessID] = p.Running
	}
	var stopped []string
	for _, p := range r.started {
		if !running[p.id] {
			continue // ended on its own or stopped by the model
		}
		if err := r.stopProcess(ctx, p, reason); err != nil {
			return stopped, err
		}
		stopped = append(stopped, fmt.Sprintf("%s (%s)", p.id, p.command))
	}
	r.started = nil
	return stopped, nil
}

// stopProcess stops one process through the executor, as the model would, and records it.
func (r *runner) stopProcess(ctx context.Context, p startedProcess, reason string) error {
	t0 := time.Now()
	grace := stopGraceSeconds
	args, err := json.Marshal(protocol.StopProcessInput{ProcessID: p.id, GraceSeconds: &grace})
	if err != nil {
		return err
	}
	call := ToolCall{Name: protocol.ToolStopProcess, Arguments: string(args)}
	res, err := r.sb.Call(ctx, call.Name, args)
	if err != nil {
		r.event(Event{Type: "error", Turn: r.turns, Call: &call, Error: err.Error(), DurationMs: ms(t0)})
		return fmt.Errorf("stopping process %s: %w", p.id, err)
	}
	outcome := CallOK
	if res.IsError {
		outcome = CallToolError
	}
	r.event(Event{Type: "stop_process", Turn: r.turns, Call: &call, Result: &res, Outcome: outcome, Command: p.command,
		Reason: reason, DurationMs: ms(t0)})
	return nil
}

// stopAtEnd stops what is still running when the run ends, with time of its own if the run's has run out: the
// executor would kill the processes with the session, but the record should say the agent stopped them.
func (r *runner) stopAtEnd(ctx context.Context) {
	if len(r.started) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endCleanupTimeout)
	defer cancel()
	_, _ = r.stopProcesses(ctx, StopAtEnd) // a failure is in the record as an error event; the verdict stands
}
