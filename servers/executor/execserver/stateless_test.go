package execserver_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stateless era's handles: a process_id "proc-" and 26 base32 characters, an output URI with 26 of them.
var (
	statelessProcessID = regexp.MustCompile(`^proc-[a-z2-7]{26}$`)
	statelessOutputURI = regexp.MustCompile(`^goalbox-output://[a-z2-7]{26}/stdout$`)
	sessionOutputURI   = regexp.MustCompile(`^goalbox-output://[a-z2-7]{16}/stdout$`)
)

const base32Alphabet = "abcdefghijklmnopqrstuvwxyz234567"

// neighbours are the handles an attacker holding one real handle would try: the next and previous value of its
// last character, and a single bit flipped in its first, middle and last character.
func neighbours(t *testing.T, handle string) []string {
	t.Helper()
	var out []string
	swap := func(i int, f func(v int) int) {
		v := strings.IndexByte(base32Alphabet, handle[i])
		if v < 0 {
			t.Fatalf("%q: %q at %d is not base32", handle, handle[i], i)
		}
		out = append(out, handle[:i]+string(base32Alphabet[f(v)&31])+handle[i+1:])
	}
	last := len(handle) - 1
	swap(last, func(v int) int { return v + 1 })
	swap(last, func(v int) int { return v - 1 })
	for _, i := range []int{len(handle) - 26, len(handle) - 13, last} {
		swap(i, func(v int) int { return v ^ 1 })
	}
	return out
}

// toolError calls a tool that must fail and returns its message.
func toolError(t *testing.T, cs *mcp.ClientSession, tool string, in any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: in})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if !res.IsError {
		t.Fatalf("%s %+v: succeeded, want a refusal: %v", tool, in, res.StructuredContent)
	}
	return mcpserve.ToolErrorText(res)
}

func listIDs(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out protocol.ListProcessesOutput
	callTool(t, cs, protocol.ToolListProcesses, map[string]any{}, &out)
	var ids []string
	for _, p := range out.Processes {
		ids = append(ids, p.ProcessID)
	}
	return ids
}

func readOK(t *testing.T, cs *mcp.ClientSession, id string) protocol.ReadProcessOutputOutput {
	t.Helper()
	var out protocol.ReadProcessOutputOutput
	callTool(t, cs, protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{ProcessID: id}, &out)
	return out
}

func resourceRefused(t *testing.T, cs *mcp.ClientSession, uri string) {
	t.Helper()
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "no such output") {
		t.Errorf("read of %s: %v, want no such output", uri, err)
	}
}

func resourceOK(t *testing.T, cs *mcp.ClientSession, uri, want string) {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Errorf("read of %s: %v", uri, err)
		return
	}
	if !strings.Contains(res.Contents[0].Text, want) {
		t.Errorf("read of %s: %.80q, want it to hold %q", uri, res.Contents[0].Text, want)
	}
}

// TestErasCannotReachEachOther: a 2025-11-25 session client and two 2026-07-28 stateless clients use one HTTP
// server at once. None can list, guess or reach another's processes and kept outputs: the stateless list is
// empty and the session's shows its own; a session's process id ("p1") and output URI mean nothing statelessly;
// the neighbours of a real handle (next and previous value, one bit flipped) find nothing, from either era, for
// read, write, stop and resources/read. The positive controls: each reaches its own, and whoever is given a handle
// reaches what it names, from either era; and after every attack the victims still run.
func TestErasCannotReachEachOther(t *testing.T) {
	s := startOutputsServer(t, execserver.Config{OutputCap: 1024})
	sess := s.connectVersion(t, mcptest.SessionEra)
	alice := s.connectVersion(t, mcptest.StatelessEra)
	mallory := s.connectVersion(t, mcptest.StatelessEra)
	if sess.ID() == "" || alice.ID() != "" || mallory.ID() != "" {
		t.Fatalf("session IDs %q %q %q: want a session for the 2025-11-25 client only", sess.ID(), alice.ID(), mallory.ID())
	}
	big := func(tag string) string { return "i=0; while [ $i -lt 400 ]; do echo " + tag + " $i; i=$((i+1)); done" }

	// What each owns: a running process that says who it is, and a kept output.
	sessProc := startProcess(t, sess, "echo session-secret; exec sleep 600")
	aliceProc := startProcess(t, alice, "echo alice-secret; exec sleep 600")
	if sessProc != "p1" || !statelessProcessID.MatchString(aliceProc) {
		t.Fatalf("process ids %q and %q: want p1 for the session and a handle for the stateless client", sessProc, aliceProc)
	}
	sessOut, _ := run(t, sess, big("session-output"))
	aliceOut, _ := run(t, alice, big("alice-output"))
	if !sessionOutputURI.MatchString(sessOut.StdoutResource) || !statelessOutputURI.MatchString(aliceOut.StdoutResource) {
		t.Fatalf("output URIs %q and %q: want a session's and a stateless handle's", sessOut.StdoutResource, aliceOut.StdoutResource)
	}

	// Listing: nobody sees another's.
	if ids := listIDs(t, alice); len(ids) != 0 {
		t.Errorf("a stateless client lists %v, want nothing", ids)
	}
	if ids := listIDs(t, mallory); len(ids) != 0 {
		t.Errorf("another stateless client lists %v, want nothing", ids)
	}
	if ids := listIDs(t, sess); len(ids) != 1 || ids[0] != sessProc {
		t.Errorf("the session lists %v, want only its own %s", ids, sessProc)
	}

	// Guessing processes: a session's ids statelessly, and the neighbours of alice's handle from both eras.
	for _, id := range []string{sessProc, "p0", "p2"} {
		if msg := toolError(t, mallory, protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{ProcessID: id}); !strings.Contains(msg, "no process") {
			t.Errorf("stateless read of the session's %s: %s", id, msg)
		}
		toolError(t, mallory, protocol.ToolStopProcess, protocol.StopProcessInput{ProcessID: id})
	}
	for _, id := range neighbours(t, strings.TrimPrefix(aliceProc, "proc-")) {
		id = "proc-" + id
		for _, cs := range []*mcp.ClientSession{mallory, sess} {
			toolError(t, cs, protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{ProcessID: id})
			toolError(t, cs, protocol.ToolWriteProcessInput, protocol.WriteProcessInputInput{ProcessID: id, Data: "x"})
			toolError(t, cs, protocol.ToolStopProcess, protocol.StopProcessInput{ProcessID: id})
		}
	}
	// Guessing outputs: the session's statelessly, the neighbours of alice's from both eras.
	resourceRefused(t, mallory, sessOut.StdoutResource)
	resourceRefused(t, alice, sessOut.StdoutResource)
	aliceHandle := strings.TrimSuffix(strings.TrimPrefix(aliceOut.StdoutResource, "goalbox-output://"), "/stdout")
	for _, h := range neighbours(t, aliceHandle) {
		for _, cs := range []*mcp.ClientSession{mallory, sess} {
			resourceRefused(t, cs, "goalbox-output://"+h+"/stdout")
		}
	}

	// Positive controls: each reaches its own, and the holder of a handle reaches what it names, in either era.
	if out := readOK(t, sess, sessProc); !out.Running || !strings.Contains(out.Stdout, "session-secret") {
		t.Errorf("the session's own process: %+v", out)
	}
	for _, cs := range []*mcp.ClientSession{alice, mallory, sess} {
		if out := readOK(t, cs, aliceProc); !out.Running || !strings.Contains(out.Stdout, "alice-secret") {
			t.Errorf("alice's process read by a holder of its handle: %+v", out)
		}
		resourceOK(t, cs, aliceOut.StdoutResource, "alice-output 0")
	}
	resourceOK(t, sess, sessOut.StdoutResource, "session-output 0")

	// The attacks stopped nothing; alice's handle stops her process, and then it is gone for everyone.
	if out := readOK(t, sess, sessProc); !out.Running {
		t.Errorf("the session's process ended under the attacks: %+v", out)
	}
	var stopped protocol.StopProcessOutput
	zero := 0 // sleep is its PID namespace's init, which ignores SIGTERM: kill at once
	callTool(t, alice, protocol.ToolStopProcess, protocol.StopProcessInput{ProcessID: aliceProc, GraceSeconds: &zero}, &stopped)
	if out := readOK(t, alice, aliceProc); out.Running {
		t.Errorf("alice's process runs after her stop: %+v", out)
	}
}

// TestStatelessProcessCap: stateless requests together run at most StatelessProcesses at once; the next start is
// refused with a message naming the cap, a session's own cap is untouched by them (positive control), and
// stopping one makes room.
func TestStatelessProcessCap(t *testing.T) {
	s := startOutputsServer(t, execserver.Config{MaxProcesses: 1, StatelessProcesses: 2})
	a, b := s.connectVersion(t, mcptest.StatelessEra), s.connectVersion(t, mcptest.StatelessEra)
	first := startProcess(t, a, "sleep 600")
	startProcess(t, b, "sleep 600")
	msg := toolError(t, a, protocol.ToolStartProcess, protocol.StartProcessInput{Command: "sleep 600"})
	if !strings.Contains(msg, "already run 2 processes") || !strings.Contains(msg, "shares") {
		t.Errorf("a third stateless process: %s", msg)
	}
	sess := s.connectVersion(t, mcptest.SessionEra)
	startProcess(t, sess, "sleep 600") // its own cap of 1
	var stopped protocol.StopProcessOutput
	zero := 0
	callTool(t, b, protocol.ToolStopProcess, protocol.StopProcessInput{ProcessID: first, GraceSeconds: &zero}, &stopped)
	startProcess(t, b, "sleep 600")
}

// TestStatelessIdleExpiry: a stateless process that no call names for the idle timeout is killed (its heartbeat
// in the workspace stops) and forgotten, and a kept output unread that long is dropped with a message saying why;
// a process named more often than that keeps running (positive control).
func TestStatelessIdleExpiry(t *testing.T) {
	const idle = 1500 * time.Millisecond // reads every idle/4 keep a process: room for a loaded machine
	s := startOutputsServer(t, execserver.Config{OutputCap: 1024, StatelessIdleTimeout: idle, StatelessUnusedTimeout: idle})
	cs := s.connectVersion(t, mcptest.StatelessEra)
	// Each beat is written aside and renamed into place, so that a kill between the shell's truncation and date's
	// write cannot leave the file empty (which once read as "never beat" on a loaded machine).
	beat := func(name string) string {
		return "while :; do date +%s%N > " + name + ".new; mv " + name + ".new " + name + "; sleep 0.05; done"
	}
	forgotten := startProcess(t, cs, beat("forgotten.beat"))
	kept := startProcess(t, cs, beat("kept.beat"))
	out, _ := run(t, cs, "i=0; while [ $i -lt 400 ]; do echo line $i; i=$((i+1)); done")
	resourceOK(t, cs, out.StdoutResource, "line 0")

	for end := time.Now().Add(4 * idle); time.Now().Before(end); time.Sleep(idle / 4) {
		readOK(t, cs, kept)
	}
	msg := toolError(t, cs, protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{ProcessID: forgotten})
	if !strings.Contains(msg, "no process") {
		t.Errorf("the idle process after %v: %s", 4*idle, msg)
	}
	stat := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(s.ws, name))
		return string(b)
	}
	// A running process's writes reach the workspace when the workspace guard applies its layer (every 2 s): the
	// beats are compared across more than that.
	wait := func() { // 2.5 s, reading the kept process as it must be read
		for range 8 {
			time.Sleep(300 * time.Millisecond)
			readOK(t, cs, kept)
		}
	}
	before := stat("forgotten.beat")
	wait()
	if after := stat("forgotten.beat"); after != before || before == "" {
		t.Errorf("the forgotten process still beats (%q, then %q): it was forgotten but not killed", before, after)
	}
	if out := readOK(t, cs, kept); !out.Running {
		t.Errorf("the process read every %v stopped: %+v", idle/4, out)
	}
	// The kept process beats on: its next beat reaches the workspace at the layer's next apply, which 2.5 s may end
	// before it is done on a loaded machine; so up to 10 s, reading the process as it must be read.
	before = stat("kept.beat")
	moved := false
	for end := time.Now().Add(10 * time.Second); !moved && time.Now().Before(end); {
		time.Sleep(300 * time.Millisecond)
		readOK(t, cs, kept)
		moved = stat("kept.beat") != before
	}
	if !moved {
		t.Errorf("the kept process's heartbeat stopped")
	}
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: out.StdoutResource})
	if err == nil || !strings.Contains(err.Error(), "no call read it") {
		t.Errorf("the output unread for %v: %v, want it dropped with the reason", 4*idle, err)
	}
}
