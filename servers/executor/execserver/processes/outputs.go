package processes

import (
	"fmt"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/outputs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A process's full outputs. Its ring buffer holds the last ProcessBuffer bytes of each stream; once a stream
// outgrows it (the first byte is about to be dropped), the stream goes whole, from its first byte, to the session's
// store, where it counts against the same budget as the commands' outputs and is evicted by the same rule. A quiet
// process costs the store nothing. The resource's byte offsets are the process's: what a read reports as dropped
// at stdout_offset N is at ?offset=N of stdout_resource, while the budget keeps it.

// keepStreams sets p's ring buffers to spill into ow's store (its session's, or the stateless one) once they drop
// a byte. Nothing is kept outside both or with full outputs off.
func (t *Table) keepStreams(ow outputs.Owner, p *Process) {
	if ow == (outputs.Owner{}) || !t.settings.Outputs.Keeps() {
		return
	}
	keep := func(name string, ring *ringBuffer) *outputs.Stream {
		k := t.settings.Outputs.KeepPartial(ow, name, fmt.Sprintf("of which process %s's buffer holds only the last %d bytes at most (complete is false while it runs)", p.id, ring.max))
		ring.overflow = k
		return k
	}
	p.stdoutKept, p.stderrKept = keep("stdout", p.stdout), keep("stderr", p.stderr)
}

// closeKept marks p's kept streams complete: the process ended.
func (p *Process) closeKept() {
	if p.stdoutKept != nil {
		p.stdoutKept.Close()
		p.stderrKept.Close()
	}
}

// withResources names p's kept streams in out and links them: a stream is named once it has outgrown the buffer,
// for as long as the store keeps it.
func (p *Process) withResources(out protocol.ReadProcessOutputOutput) (protocol.ReadProcessOutputOutput, []mcp.Content) {
	if p.stdoutKept == nil {
		return out, nil
	}
	var links []mcp.Content
	if link := p.stdoutKept.Link(); link != nil {
		out.StdoutResource, links = link.URI, append(links, link)
	}
	if link := p.stderrKept.Link(); link != nil {
		out.StderrResource, links = link.URI, append(links, link)
	}
	return out, links
}
