package execserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callTool calls a tool that must succeed and returns its structured result decoded into out, and its resource links.
func callTool(t *testing.T, cs *mcp.ClientSession, tool string, in, out any) []*mcp.ResourceLink {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: in})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s %+v: tool error %s", tool, in, mcpserve.ToolErrorText(res))
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	var links []*mcp.ResourceLink
	for _, c := range res.Content[1:] {
		link, ok := c.(*mcp.ResourceLink)
		if !ok {
			t.Fatalf("%s: content item %T after the JSON text, want only resource links", tool, c)
		}
		links = append(links, link)
	}
	return links
}

// startProcess starts command as a process with its stdin open.
func startProcess(t *testing.T, cs *mcp.ClientSession, command string) string {
	t.Helper()
	var out protocol.StartProcessOutput
	callTool(t, cs, protocol.ToolStartProcess, protocol.StartProcessInput{Command: command, Stdin: "open"}, &out)
	return out.ProcessID
}

// readProcess reads p on from the offsets of last, waiting up to a second for something new.
func readProcess(t *testing.T, cs *mcp.ClientSession, id string, last protocol.ReadProcessOutputOutput) (protocol.ReadProcessOutputOutput, []*mcp.ResourceLink) {
	t.Helper()
	var out protocol.ReadProcessOutputOutput
	links := callTool(t, cs, protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{
		ProcessID: id, StdoutOffset: last.StdoutOffset, StderrOffset: last.StderrOffset, WaitSeconds: 1}, &out)
	return out, links
}

// readUntil reads p on until cond holds, for at most 60 seconds.
func readProcessUntil(t *testing.T, cs *mcp.ClientSession, id string, cond func(protocol.ReadProcessOutputOutput) bool) (protocol.ReadProcessOutputOutput, []*mcp.ResourceLink, int64) {
	t.Helper()
	var last protocol.ReadProcessOutputOutput
	var dropped int64
	for deadline := time.Now().Add(60 * time.Second); ; {
		var links []*mcp.ResourceLink
		last, links = readProcess(t, cs, id, last)
		dropped += last.StdoutDropped
		if cond(last) {
			return last, links, dropped
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s: still not there after 60s: running %v, offsets %d %d, resources %q %q", id, last.Running,
				last.StdoutOffset, last.StderrOffset, last.StdoutResource, last.StderrResource)
		}
	}
}

// readPages reads uri from offset 0 in pages of length until it has size bytes; it returns them and the last
// page's _meta complete.
func readPages(t *testing.T, cs *mcp.ClientSession, uri string, length, size int) ([]byte, bool) {
	t.Helper()
	var all []byte
	complete := false
	for len(all) < size {
		res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: fmt.Sprintf("%s?offset=%d&length=%d", uri, len(all), length)})
		if err != nil {
			t.Fatalf("read %s at %d: %v", uri, len(all), err)
		}
		c := res.Contents[0]
		data := []byte(c.Text)
		if c.Blob != nil {
			data = c.Blob
		}
		if len(data) == 0 {
			t.Fatalf("read %s at %d: empty page", uri, len(all))
		}
		all = append(all, data...)
		complete = c.Meta["complete"] == true
	}
	return all, complete
}

// TestFullOutputOfProcess: a process whose streams outgrow their ring buffers keeps them whole, from the first
// byte, as resources its reads name (with resource links) while it runs; the resource is readable as far as the
// process got, says it is not complete until the process ends, and is refused to another session. A process that
// stays within its buffer has none.
func TestFullOutputOfProcess(t *testing.T) {
	const buffer = 4096
	s := startOutputsServer(t, execserver.Config{ProcessBuffer: buffer})
	cs := s.connect(t)

	quiet := startProcess(t, cs, "echo quiet; echo also >&2")
	last, links, _ := readProcessUntil(t, cs, quiet, func(o protocol.ReadProcessOutputOutput) bool { return !o.Running })
	if last.StdoutResource != "" || last.StderrResource != "" || len(links) != 0 {
		t.Fatalf("a process within its buffer got resources %q %q and %d links", last.StdoutResource, last.StderrResource, len(links))
	}

	// stdout: 5000 numbered lines with multi-byte characters; stderr: random bytes, kept in the workspace to
	// compare. Then it waits for a line on stdin before it ends.
	p := startProcess(t, cs, `i=0; while [ $i -lt 5000 ]; do echo "line $i ✓"; i=$((i+1)); done; `+
		`head -c 50000 /dev/urandom > noise.bin; cat noise.bin >&2; read x; echo "bye $x"`)
	var want bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&want, "line %d ✓\n", i)
	}
	last, links, dropped := readProcessUntil(t, cs, p, func(o protocol.ReadProcessOutputOutput) bool {
		return o.StdoutOffset == int64(want.Len()) && o.StderrOffset == 50000
	})
	// A running process's writes reach the workspace when the workspace guard applies its layer (every 2 s).
	var noise []byte
	var err error
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if noise, err = os.ReadFile(filepath.Join(s.ws, "noise.bin")); (err == nil && len(noise) == 50000) || time.Now().After(end) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if !last.Running || dropped == 0 {
		t.Fatalf("the process should still run, having dropped output: running %v, %d dropped", last.Running, dropped)
	}
	if last.StdoutResource == "" || last.StderrResource == "" || len(links) != 2 || links[0].URI != last.StdoutResource ||
		links[1].URI != last.StderrResource || !strings.Contains(links[0].Description, "buffer holds only the last 4096 bytes") {
		t.Fatalf("resources %q %q, links %+v", last.StdoutResource, last.StderrResource, links)
	}
	got, complete := readPages(t, cs, last.StdoutResource, 10_000, want.Len())
	if !bytes.Equal(got, want.Bytes()) || complete {
		t.Fatalf("stdout while running: %d bytes (want %d), complete %v (want false)", len(got), want.Len(), complete)
	}
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: fmt.Sprintf("%s?offset=%d", last.StdoutResource, want.Len())}); err == nil ||
		!strings.Contains(err.Error(), "still being written") {
		t.Errorf("read at the end while running: %v", err)
	}
	if got, _ := readPages(t, cs, last.StderrResource, 16_384, len(noise)); !bytes.Equal(got, noise) {
		t.Errorf("stderr read back: %d bytes, want %d", len(got), len(noise))
	}
	// The dropped bytes are where the read said: at the offsets it reported.
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: last.StdoutResource + "?offset=6&length=6"})
	if err != nil || res.Contents[0].Text != want.String()[6:12] {
		t.Errorf("bytes 6-11: %v %+v", err, res)
	}

	other := s.connect(t)
	if _, err := other.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: last.StdoutResource}); err == nil ||
		!strings.Contains(err.Error(), "only by the MCP session whose command made it") {
		t.Fatalf("another session's read of a process's output: %v, want a refusal", err)
	}

	var w protocol.WriteProcessInputOutput
	callTool(t, cs, protocol.ToolWriteProcessInput, protocol.WriteProcessInputInput{ProcessID: p, Data: "now\n", Close: true}, &w)
	end, _, _ := readProcessUntil(t, cs, p, func(o protocol.ReadProcessOutputOutput) bool { return !o.Running })
	want.WriteString("bye now\n")
	got, complete = readPages(t, cs, end.StdoutResource, 1<<20, want.Len())
	if end.StdoutResource != last.StdoutResource || !bytes.Equal(got, want.Bytes()) || !complete {
		t.Fatalf("stdout after the exit: resource %q (was %q), %d bytes (want %d), complete %v", end.StdoutResource, last.StdoutResource,
			len(got), want.Len(), complete)
	}
}

// TestFullOutputOfProcessBudget: a process's kept stream counts against the session's budget like a command's: one
// that alone outgrows it is not kept (its reads name no resource, an earlier URI says why), while one within it is.
func TestFullOutputOfProcessBudget(t *testing.T) {
	const budget = 2 << 20
	s := startOutputsServer(t, execserver.Config{ProcessBuffer: 4096, OutputBudget: budget})
	cs := s.connect(t)
	print := func(kib int) string { return fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; read x", kib<<10) }

	within := startProcess(t, cs, print(1024)) // control: 1 MiB fits
	last, _, _ := readProcessUntil(t, cs, within, func(o protocol.ReadProcessOutputOutput) bool { return o.StdoutOffset == 1<<20 })
	if last.StdoutResource == "" {
		t.Fatalf("a 1 MiB stream in a 2 MiB budget is not kept: dropped %d, no stdout_resource", last.StdoutDropped)
	}
	keptURI := last.StdoutResource

	over := startProcess(t, cs, print(3<<10))
	var seen string // the URI while it was within the budget, if a read caught it then
	last, _, _ = readProcessUntil(t, cs, over, func(o protocol.ReadProcessOutputOutput) bool {
		if o.StdoutResource != "" {
			seen = o.StdoutResource
		}
		return o.StdoutOffset == 3<<20
	})
	if last.StdoutResource != "" {
		t.Errorf("a 3 MiB stream in a 2 MiB budget is named %q", last.StdoutResource)
	}
	// On its way it evicted the older output, and saying why.
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: keptURI}); err == nil || !strings.Contains(err.Error(), "was evicted") {
		t.Errorf("read of the older output: %v, want it evicted", err)
	}
	if seen != "" {
		if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: seen}); err == nil || !strings.Contains(err.Error(), "alone outgrew") {
			t.Errorf("read of the outgrown stream: %v", err)
		}
	}
	if h := s.ex.Health().FullOutputs; h.Bytes > budget {
		t.Errorf("the session holds %d bytes, over its budget %d", h.Bytes, budget)
	}
}

// TestFullOutputOfProcessDisabled: with -output-budget -1 a process's dropped output is not kept.
func TestFullOutputOfProcessDisabled(t *testing.T) {
	s := startOutputsServer(t, execserver.Config{ProcessBuffer: 4096, OutputBudget: -1})
	cs := s.connect(t)
	p := startProcess(t, cs, "head -c 10000 /dev/zero")
	last, links, dropped := readProcessUntil(t, cs, p, func(o protocol.ReadProcessOutputOutput) bool { return !o.Running })
	if dropped == 0 || last.StdoutResource != "" || len(links) != 0 {
		t.Errorf("dropped %d, resource %q, %d links; want output dropped and no resource", dropped, last.StdoutResource, len(links))
	}
}
