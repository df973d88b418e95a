//go:build linux

package sandboxtest

// The process tools' contract, for any backend: a server started as a process answers a command over the shared
// loopback, output is read on from offsets while it comes, stdin reaches an open process, a stop ends the whole
// tree (checked on the host), a session's processes die with it, the per-session cap holds, and another session
// can neither see nor touch them.

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call calls a tool and decodes its structured result; on a tool error it returns the zero Out and the message.
func Call[Out any](t testing.TB, cs *mcp.ClientSession, tool string, in any) (Out, string) {
	t.Helper()
	var out Out
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: in})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		return out, mcpserve.ToolErrorText(res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", tool, b, err)
	}
	return out, ""
}

// MustCall calls a tool that must succeed.
func MustCall[Out any](t testing.TB, cs *mcp.ClientSession, tool string, in any) Out {
	t.Helper()
	out, msg := Call[Out](t, cs, tool, in)
	if msg != "" {
		t.Fatalf("%s %+v: tool error: %s", tool, in, msg)
	}
	return out
}

// Connect opens another client session to srv.
func Connect(t testing.TB, srv *Server) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "execserver-test-2", Version: "0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, mcptest.ClientOptions(mcptest.SessionEra))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// readUntil reads a process's output on from the start until done says so, or the process ended, or d passed.
func readUntil(t testing.TB, cs *mcp.ClientSession, id string, d time.Duration, done func(stdout, stderr string) bool) (protocol.ReadProcessOutputOutput, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	var last protocol.ReadProcessOutputOutput
	for end := time.Now().Add(d); ; {
		last = MustCall[protocol.ReadProcessOutputOutput](t, cs, protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{
			ProcessID: id, StdoutOffset: last.StdoutOffset, StderrOffset: last.StderrOffset, WaitSeconds: 1})
		if last.StdoutDropped != 0 || last.StderrDropped != 0 {
			t.Fatalf("dropped output: %+v", last)
		}
		stdout.WriteString(last.Stdout)
		stderr.WriteString(last.Stderr)
		if done(stdout.String(), stderr.String()) || !last.Running || time.Now().After(end) {
			return last, stdout.String(), stderr.String()
		}
	}
}

// ProcessTarget says what a backend's processes can do.
type ProcessTarget struct {
	// Serve is a command that serves the workspace over HTTP on 127.0.0.1:port and prints "serving" on stderr or
	// stdout when ready; Fetch a command that fetches a path from it. Empty: the backend has no loopback to share.
	Serve func(port int) string
	Fetch func(port int, path string) string
	// MaxProcesses is the executor's cap per session (Config.MaxProcesses).
	MaxProcesses int
}

// RunProcesses runs the process tests on srv, whose workspace is ws.
func RunProcesses(t *testing.T, srv *Server, ws string, target ProcessTarget) {
	cs := srv.Session
	start := func(t *testing.T, cs *mcp.ClientSession, in protocol.StartProcessInput) string {
		t.Helper()
		return MustCall[protocol.StartProcessOutput](t, cs, protocol.ToolStartProcess, in).ProcessID
	}
	stop := func(t *testing.T, cs *mcp.ClientSession, id string, grace int) protocol.StopProcessOutput {
		t.Helper()
		return MustCall[protocol.StopProcessOutput](t, cs, protocol.ToolStopProcess, protocol.StopProcessInput{ProcessID: id, GraceSeconds: &grace})
	}

	t.Run("a server answers a command over the shared loopback", func(t *testing.T) {
		if target.Serve == nil {
			t.Skip("this backend has no loopback shared between commands")
		}
		page := "page-" + RandomHex(6)
		if err := os.WriteFile(filepath.Join(ws, "page.txt"), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		port := 20000 + rand.IntN(20000)
		id := start(t, cs, protocol.StartProcessInput{Command: target.Serve(port)})
		if last, out, errOut := readUntil(t, cs, id, 30*time.Second, func(o, e string) bool { return strings.Contains(o+e, "serving") }); !last.Running {
			t.Fatalf("the server ended: %+v; stdout %q stderr %q", last, out, errOut)
		}
		got := MustRun(t, cs, protocol.RunCommandInput{Command: target.Fetch(port, "/page.txt"), TimeoutSeconds: 20})
		if got.Stdout != page {
			t.Errorf("a command fetched %q from the process's server, want %q (%+v)", got.Stdout, page, got)
		}
		// Nothing outside the sandbox reaches it.
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			c.Close()
			t.Errorf("the host reached the process's server on 127.0.0.1:%d", port)
		}
		stop(t, cs, id, 2)
	})

	t.Run("output read on from offsets while it comes", func(t *testing.T) {
		id := start(t, cs, protocol.StartProcessInput{Command: `for i in 1 2 3 4; do echo line$i; echo err$i >&2; sleep 0.3; done; exit 5`})
		reads := 0
		last, out, errOut := readUntil(t, cs, id, 30*time.Second, func(string, string) bool { reads++; return false })
		if last.Running || last.ExitCode == nil || *last.ExitCode != 5 {
			last, out, errOut = readUntil(t, cs, id, 10*time.Second, func(string, string) bool { return false })
		}
		if out != "line1\nline2\nline3\nline4\n" || errOut != "err1\nerr2\nerr3\nerr4\n" || last.ExitCode == nil || *last.ExitCode != 5 {
			t.Errorf("read in pieces: stdout %q stderr %q, last %+v", out, errOut, last)
		}
		if reads < 2 {
			t.Errorf("the output came in %d read(s): want it read while the process ran", reads)
		}
		// Reading again from 0 gives it all at once.
		all := MustCall[protocol.ReadProcessOutputOutput](t, cs, protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{ProcessID: id})
		if all.Stdout != out || all.StdoutOffset != int64(len(out)) || all.Running {
			t.Errorf("re-read from 0: %+v", all)
		}
	})

	t.Run("stdin reaches an open process", func(t *testing.T) {
		id := start(t, cs, protocol.StartProcessInput{Command: `while IFS= read -r l; do echo "got $l"; done; echo eof`, Stdin: "open"})
		w := MustCall[protocol.WriteProcessInputOutput](t, cs, protocol.ToolWriteProcessInput, protocol.WriteProcessInputInput{ProcessID: id, Data: "one\n"})
		if w.BytesWritten != 4 {
			t.Errorf("bytes_written %d, want 4", w.BytesWritten)
		}
		readUntil(t, cs, id, 20*time.Second, func(o, _ string) bool { return o == "got one\n" })
		MustCall[protocol.WriteProcessInputOutput](t, cs, protocol.ToolWriteProcessInput, protocol.WriteProcessInputInput{ProcessID: id, Data: "two\n", Close: true})
		last, out, _ := readUntil(t, cs, id, 20*time.Second, func(string, string) bool { return false })
		if out != "got one\ngot two\neof\n" || last.ExitCode == nil || *last.ExitCode != 0 {
			t.Errorf("stdout %q, last %+v", out, last)
		}
		if _, msg := Call[protocol.WriteProcessInputOutput](t, cs, protocol.ToolWriteProcessInput, protocol.WriteProcessInputInput{ProcessID: id, Data: "x"}); !strings.Contains(msg, "closed") {
			t.Errorf("a write after close: %q, want an error that says stdin is closed", msg)
		}
		closedID := start(t, cs, protocol.StartProcessInput{Command: `cat; echo done`})
		last, out, _ = readUntil(t, cs, closedID, 20*time.Second, func(string, string) bool { return false })
		if out != "done\n" {
			t.Errorf("a process started with stdin closed: stdout %q, %+v", out, last)
		}
	})

	t.Run("stop ends the whole tree", func(t *testing.T) {
		marker := fmt.Sprintf("300.%d", rand.IntN(1e6)) // a sleep's argument, unique on the host
		id := start(t, cs, protocol.StartProcessInput{Command: fmt.Sprintf(`(setsid sleep %s &); sleep %s & sleep %s`, marker, marker, marker)})
		waitHost(t, 20*time.Second, "the process's sleeps on the host", func() bool { return len(sleepsWith(marker)) == 3 })
		got := stop(t, cs, id, 3)
		if got.Killed || got.ExitCode == 0 {
			t.Errorf("stop with SIGTERM: %+v, want it ended by the signal, not killed", got)
		}
		if left := ProcessesWith(marker); len(left) != 0 {
			t.Errorf("processes left after the stop: %v", left)
		}
		list := MustCall[protocol.ListProcessesOutput](t, cs, protocol.ToolListProcesses, protocol.ListProcessesInput{})
		found := false
		for _, p := range list.Processes {
			if p.ProcessID == id {
				found = true
				if p.Running || p.ExitCode == nil {
					t.Errorf("listed after the stop: %+v", p)
				}
			}
		}
		if !found {
			t.Errorf("%s not listed: %+v", id, list)
		}
		// A process that ignores SIGTERM is killed after the grace.
		trapID := start(t, cs, protocol.StartProcessInput{Command: `trap '' TERM; echo ready; while :; do sleep 0.2; done`})
		readUntil(t, cs, trapID, 20*time.Second, func(o, _ string) bool { return o == "ready\n" })
		if got := stop(t, cs, trapID, 1); !got.Killed || got.ExitCode != -1 {
			t.Errorf("stop of a process that ignores SIGTERM: %+v, want killed, exit code -1", got)
		}
	})

	t.Run("the per-session cap", func(t *testing.T) {
		var ids []string
		for range target.MaxProcesses {
			ids = append(ids, start(t, cs, protocol.StartProcessInput{Command: "sleep 120"}))
		}
		_, msg := Call[protocol.StartProcessOutput](t, cs, protocol.ToolStartProcess, protocol.StartProcessInput{Command: "sleep 120"})
		if !strings.Contains(msg, "-max-processes") {
			t.Errorf("past the cap of %d: %q, want an error that names -max-processes", target.MaxProcesses, msg)
		}
		for _, id := range ids {
			stop(t, cs, id, 0)
		}
	})

	t.Run("another session can neither see nor touch a process", func(t *testing.T) {
		id := start(t, cs, protocol.StartProcessInput{Command: "sleep 120", Stdin: "open"})
		other := Connect(t, srv)
		if list := MustCall[protocol.ListProcessesOutput](t, other, protocol.ToolListProcesses, protocol.ListProcessesInput{}); len(list.Processes) != 0 {
			t.Errorf("another session lists %+v", list.Processes)
		}
		grace := 0
		for tool, in := range map[string]any{
			protocol.ToolReadProcessOutput: protocol.ReadProcessOutputInput{ProcessID: id},
			protocol.ToolWriteProcessInput: protocol.WriteProcessInputInput{ProcessID: id, Data: "x"},
			protocol.ToolStopProcess:       protocol.StopProcessInput{ProcessID: id, GraceSeconds: &grace},
		} {
			if _, msg := Call[map[string]any](t, other, tool, in); !strings.Contains(msg, "no process") {
				t.Errorf("%s from another session: %q, want \"no process\"", tool, msg)
			}
		}
		if got := MustCall[protocol.ReadProcessOutputOutput](t, cs, protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{ProcessID: id}); !got.Running {
			t.Errorf("the process did not survive the other session's attempts: %+v", got)
		}
		stop(t, cs, id, 0)
	})

	t.Run("a session's processes die with it", func(t *testing.T) {
		other := Connect(t, srv)
		marker := fmt.Sprintf("400.%d", rand.IntN(1e6))
		MustCall[protocol.StartProcessOutput](t, other, protocol.ToolStartProcess, protocol.StartProcessInput{Command: fmt.Sprintf("sleep %s & sleep %s", marker, marker)})
		waitHost(t, 20*time.Second, "the other session's sleeps on the host", func() bool { return len(sleepsWith(marker)) == 2 })
		if err := other.Close(); err != nil {
			t.Fatal(err)
		}
		waitHost(t, 20*time.Second, "the closed session's processes to die", func() bool { return len(ProcessesWith(marker)) == 0 })
	})

	t.Run("bad input", func(t *testing.T) {
		for _, c := range []struct {
			tool string
			in   any
			want string
		}{
			{protocol.ToolStartProcess, protocol.StartProcessInput{Command: "true", Stdin: "half"}, `give "open"`},
			{protocol.ToolStartProcess, protocol.StartProcessInput{Command: " "}, "command is empty"},
			{protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{ProcessID: "p999"}, "no process"},
			{protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{ProcessID: "p1", WaitSeconds: 31}, "give 0 to 30"},
			{protocol.ToolReadProcessOutput, protocol.ReadProcessOutputInput{ProcessID: "p1", StdoutOffset: -1}, "0 or more"},
		} {
			if _, msg := Call[map[string]any](t, cs, c.tool, c.in); !strings.Contains(msg, c.want) {
				t.Errorf("%s %+v: %q, want it to say %q", c.tool, c.in, msg, c.want)
			}
		}
	})
}

// sleepsWith lists the host's sleep processes whose argument is arg (the shell that started them may show it too).
func sleepsWith(arg string) []string {
	var sleeps []string
	for _, p := range ProcessesWith(arg) {
		if _, cmd, _ := strings.Cut(p, ":"); strings.HasPrefix(cmd, "sleep ") {
			sleeps = append(sleeps, p)
		}
	}
	return sleeps
}

func waitHost(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited %v for %s", d, what)
		}
	}
}
