package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// ErrCommandRefused is RunCommand's error when the executor answered with a tool error (a cwd outside the
// workspace, a timeout over its maximum) or without the structured output its contract promises.
var ErrCommandRefused = errors.New("the executor would not run the command")

// RunCommand runs one shell command through sb's sandbox_run_command tool and decodes the output. It is the one
// way the agent runs a command of its own, not the model's: the loop's verification and the benchmark's grader.
// A command that exits non-zero is a normal result; the error is the sandbox failing (as Call returned it) or
// ErrCommandRefused with the executor's message. res is the tool result as the server sent it, for the record.
func RunCommand(ctx context.Context, sb Sandbox, in protocol.RunCommandInput) (out protocol.RunCommandOutput, res ToolResult, err error) {
	args, err := json.Marshal(in)
	if err != nil {
		return out, res, err
	}
	res, err = sb.Call(ctx, protocol.ToolRunCommand, args)
	if err != nil {
		return out, res, err
	}
	if res.IsError || json.Unmarshal(res.Structured, &out) != nil {
		return out, res, fmt.Errorf("%w: %s", ErrCommandRefused, res.Text)
	}
	return out, res, nil
}

// CommandOutput is a command's stdout followed by its stderr, on a line of its own. The executor reports them
// apart, so their interleaving is lost; test runners write their verdicts to one stream, so nothing is lost for
// deciding a test run.
func CommandOutput(o protocol.RunCommandOutput) string {
	if o.Stderr == "" {
		return o.Stdout
	}
	if o.Stdout == "" || strings.HasSuffix(o.Stdout, "\n") {
		return o.Stdout + o.Stderr
	}
	return o.Stdout + "\n" + o.Stderr
}
