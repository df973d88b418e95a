package execserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWriteToProcessThatNeverReads: sandbox_write_process_input to a process that never reads
// its stdin returns a clear error after the timeout instead of blocking for ever, a second write says the first is
// still pending, and the server keeps serving meanwhile; a process that reads takes the same megabyte (positive
// control), and stopping the one that does not read ends the pending write.
func TestWriteToProcessThatNeverReads(t *testing.T) {
	const timeout = 500 * time.Millisecond
	s := startOutputsServer(t, execserver.Config{StdinWriteTimeout: timeout})
	cs := s.connect(t)
	ctx := context.Background()
	data := strings.Repeat("x", 1<<20) // far past a pipe's 64 KiB buffer

	write := func(id, data string) (*mcp.CallToolResult, time.Duration) {
		t.Helper()
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: protocol.ToolWriteProcessInput,
			Arguments: protocol.WriteProcessInputInput{ProcessID: id, Data: data}})
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		return res, time.Since(start)
	}

	// A write the process took whole within the server's timeout succeeds: the result is the proof, not the call's
	// time, which also carries the megabyte's JSON both ways (seconds under the race detector on a busy machine).
	reader := startProcess(t, cs, "cat >/dev/null")
	if res, took := write(reader, data); res.IsError || !strings.Contains(mcpserve.ToolErrorText(res), `"bytes_written":1048576`) {
		t.Errorf("positive control: a process that reads took 1 MiB in %v: %s", took, mcpserve.ToolErrorText(res))
	}

	sleeper := startProcess(t, cs, "sleep 600")
	res, took := write(sleeper, data)
	text := mcpserve.ToolErrorText(res)
	if !res.IsError || !strings.Contains(text, "did not read its input within") || !strings.Contains(text, "of 1048576 bytes taken") {
		t.Errorf("write to a process that never reads: %+v %s", res.IsError, text)
	}
	if took < timeout || took > timeout+5*time.Second {
		t.Errorf("the write returned after %v, want about %v", took, timeout)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var out protocol.RunCommandOutput
		callTool(t, cs, protocol.ToolRunCommand, protocol.RunCommandInput{Command: "echo still serving"}, &out)
		if out.Stdout != "still serving\n" {
			t.Errorf("a command while the write waits: %+v", out)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server stopped serving while a write to a process waits")
	}
	if res, _ := write(sleeper, "y"); !res.IsError || !strings.Contains(mcpserve.ToolErrorText(res), "earlier write") {
		t.Errorf("a second write while the first waits: %s", mcpserve.ToolErrorText(res))
	}
	var stopped protocol.StopProcessOutput
	callTool(t, cs, protocol.ToolStopProcess, protocol.StopProcessInput{ProcessID: sleeper}, &stopped)
	// The pending write ended with the process: a new write is answered at once, saying the process ended.
	res, took = write(sleeper, "z")
	if !res.IsError || took > timeout {
		t.Errorf("a write after the stop: %v %s", took, mcpserve.ToolErrorText(res))
	}
}
