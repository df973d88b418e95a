package execserver

import (
	"io"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/outputs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runCommandResult is sandbox_run_command's result: the contract's fields, and a resource_link content item for each
// stream kept whole (mcpserve.AddTool appends them after the JSON text).
type runCommandResult struct {
	protocol.RunCommandOutput
	links []mcp.Content
}

// MoreContent implements mcpserve.MoreContent.
func (r runCommandResult) MoreContent() []mcp.Content { return r.links }

// LongFields implements mcpserve.LongFields: the streams go last in the result's text, after every other field.
func (r runCommandResult) LongFields() []string { return streamFields }

// streamFields are the JSON names of a command's two streams in the executor's results (protocol.RunCommandOutput,
// protocol.ReadProcessOutputOutput): the members that can be long, which a client's truncation should cut rather
// than the facts before them.
var streamFields = []string{"stdout", "stderr"}

// runOutputs keeps a command's two streams whole, past the output cap, for the session that runs it.
type runOutputs struct{ stdout, stderr *outputs.Stream }

// keepRunOutputs tees the request's writers to the session's store. Only a stream longer than the cap (one the
// result truncates) is kept.
func (e *Executor) keepRunOutputs(ow outputs.Owner, r *backend.Request) runOutputs {
	ro := runOutputs{stdout: e.outputs.Keep(ow, "stdout", e.cfg.OutputCap), stderr: e.outputs.Keep(ow, "stderr", e.cfg.OutputCap)}
	r.Stdout, r.Stderr = io.MultiWriter(r.Stdout, ro.stdout), io.MultiWriter(r.Stderr, ro.stderr)
	return ro
}

// close ends both streams (the command is over).
func (ro runOutputs) close() {
	ro.stdout.Close()
	ro.stderr.Close()
}

// result names the kept streams in out and links them.
func (ro runOutputs) result(out protocol.RunCommandOutput) runCommandResult {
	res := runCommandResult{RunCommandOutput: out}
	if out.StdoutTruncated {
		if link := ro.stdout.Link(); link != nil {
			res.StdoutResource, res.links = link.URI, append(res.links, link)
		}
	}
	if out.StderrTruncated {
		if link := ro.stderr.Link(); link != nil {
			res.StderrResource, res.links = link.URI, append(res.links, link)
		}
	}
	return res
}
