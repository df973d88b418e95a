package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// The model's background processes, end to end: a real HTTP server started with sandbox_start_process, fetched by a
// command over the sandbox's loopback, and stopped — by the model, or by the agent when the model leaves it running.
// Each server is named on its command line by a random folder, so the host's /proc shows which processes are its.

// requireLoopback skips where commands get no private loopback to listen on (the local backend's fallback mode).
func requireLoopback(t *testing.T) {
	t.Helper()
	l, err := sandbox.StartLocal(sandbox.LocalOptions{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	exec, _ := l.Health()["executor"].(protocol.ExecutorHealth)
	if !exec.Confinement.Network.HasLoopback() {
		t.Skipf("commands have no private loopback here (network %s): a server cannot listen", exec.Confinement.Network)
	}
}

// hostPIDs are the host's processes whose command line contains marker.
func hostPIDs(marker string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitPIDs waits until the host's processes named by marker are there (want) or gone (!want), and returns them.
func waitPIDs(t testing.TB, marker string, want bool) []int {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pids := hostPIDs(marker)
		if (len(pids) > 0) == want {
			return pids
		}
		if time.Now().After(end) {
			t.Errorf("processes named %s on the host: %v; want some: %v", marker, pids, want)
			return pids
		}
	}
}

// server is a page and the command that serves it on 127.0.0.1:8000 of the sandbox, named by a random folder.
type server struct {
	dir, page, start string
}

func newServer(t *testing.T) server {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	dir := "www-" + hex.EncodeToString(b)
	return server{dir: dir, page: "hello from a process " + dir,
		start: "python3 -u -m http.server 8000 --bind 127.0.0.1 --directory " + dir}
}

func (s server) setup() []looptest.Call {
	return []looptest.Call{write(s.dir+"/index.html", s.page+"\n"),
		{Name: protocol.ToolStartProcess, Args: looptest.Args(protocol.StartProcessInput{Command: s.start})}}
}

// fetch waits for the server to say it serves, then saves the page from a command.
func (s server) fetch() []looptest.Call {
	return []looptest.Call{
		{Name: protocol.ToolReadProcessOutput, Args: `{"process_id":"p1","wait_seconds":10}`},
		command("for i in $(seq 40); do curl -sf 127.0.0.1:8000/ > fetched.html && exit 0; sleep 0.25; done; exit 1"),
	}
}

// verify passes when the page was fetched, and only once the server is down.
func (s server) verify(more string) string {
	return "grep -q '" + s.page + "' fetched.html && ! curl -s --max-time 2 127.0.0.1:8000/ >/dev/null" + more
}

// fetched checks the request after fetch: the page reached the model, and the server runs on the host.
func (s server) fetched(t testing.TB, req looptest.Request) {
	tm := toolMessages(req)
	if out := tm[len(tm)-1].Text(); !strings.Contains(out, `"exit_code":0`) {
		t.Errorf("the command could not fetch the page: %s", out)
	}
	if out := tm[len(tm)-2].Text(); !strings.Contains(out, `"running":true`) || !strings.Contains(out, "Serving HTTP") {
		t.Errorf("the server's output should reach the model while it runs: %s", out)
	}
	waitPIDs(t, s.dir, true)
}

// eventsOf are the transcript's events of one type.
func eventsOf(r agentRun, typ string) []loop.Event {
	var out []loop.Event
	for _, ev := range r.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func TestModelStartsAndStopsAServer(t *testing.T) {
	requireLoopback(t)
	s := newServer(t)
	model := looptest.New(t,
		looptest.Step{Calls: s.setup(), Check: func(t testing.TB, req looptest.Request) {
			for _, name := range []string{protocol.ToolStartProcess, protocol.ToolReadProcessOutput, protocol.ToolWriteProcessInput,
				protocol.ToolStopProcess, protocol.ToolListProcesses} {
				if !strings.Contains(strings.Join(req.Tools, " "), name) {
					t.Errorf("tool %s not offered to the model; offered %v", name, req.Tools)
				}
			}
			if !strings.Contains(req.Messages[0].Text(), "sandbox_start_process instead of sandbox_run_command") {
				t.Errorf("the system prompt should say when to start a process: %s", req.Messages[0].Text())
			}
		}},
		looptest.Step{Calls: s.fetch(), Check: func(t testing.TB, req looptest.Request) {
			if out := toolMessages(req)[1].Text(); !strings.Contains(out, `"process_id":"p1"`) {
				t.Errorf("start_process answered %s", out)
			}
			waitPIDs(t, s.dir, true)
		}},
		looptest.Step{Calls: []looptest.Call{{Name: protocol.ToolStopProcess, Args: `{"process_id":"p1"}`}}, Check: s.fetched},
		looptest.Step{Content: "The page is served and the server is stopped.", Check: func(t testing.TB, req looptest.Request) {
			waitPIDs(t, s.dir, false) // the model's stop ended the whole tree, checked on the host before the run ends
		}},
	)
	r := runAgent(t, model, "", nil, "-goal", "serve a page", "-verify", s.verify(""))
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if stops := eventsOf(r, "stop_process"); len(stops) != 0 {
		t.Errorf("the agent stopped a process the model had stopped: %+v", stops)
	}
	for _, want := range []string{"turn 1  sandbox_start_process " + s.start[:40], "started p1",
		"turn 3  sandbox_stop_process p1  exit "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("progress lines lack %q", want)
		}
	}
	if pids := hostPIDs(s.dir); len(pids) != 0 {
		t.Errorf("processes left on the host: %v", pids)
	}
}

func TestAgentStopsTheServerTheModelLeftRunning(t *testing.T) {
	requireLoopback(t)
	s := newServer(t)
	var pids []int
	model := looptest.New(t,
		looptest.Step{Calls: s.setup()},
		looptest.Step{Calls: s.fetch()},
		looptest.Step{Content: "The page is served.", Check: func(t testing.TB, req looptest.Request) {
			s.fetched(t, req)
			pids = hostPIDs(s.dir)
		}},
		// The first check fails (second.txt is missing): the model hears that its server was stopped.
		looptest.Step{Calls: []looptest.Call{write("second.txt", "x")}, Check: func(t testing.TB, req looptest.Request) {
			last := req.Messages[len(req.Messages)-1].Text()
			if !strings.Contains(last, "these processes you left running were stopped: p1 ("+s.start+")") {
				t.Errorf("the failed check should name the stopped process: %s", last)
			}
			waitPIDs(t, s.dir, false)
		}},
		looptest.Step{Content: "done"},
	)
	r := runAgent(t, model, "", nil, "-goal", "serve a page", "-verify", s.verify(" && test -f second.txt"))
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if len(pids) == 0 {
		t.Fatal("no server process was seen on the host while it ran")
	}
	var types []string
	for _, ev := range r.events {
		if ev.Type != "message" && ev.Type != "model" && ev.Type != "tool" {
			types = append(types, ev.Type)
		}
	}
	// One stop, before the first check (and before its checkpoint); the second check finds nothing running.
	if got := strings.Join(types, " "); got != "start stop_process checkpoint verify checkpoint verify end" {
		t.Errorf("events %s", got)
	}
	stop := eventsOf(r, "stop_process")[0]
	var out protocol.StopProcessOutput
	if stop.Reason != loop.StopBeforeVerify || stop.Outcome != loop.CallOK || stop.Command != s.start ||
		stop.Call.Name != protocol.ToolStopProcess || json.Unmarshal(stop.Result.Structured, &out) != nil || out.ProcessID != "p1" {
		t.Errorf("stop_process event = %+v", stop)
	}
	if !strings.Contains(r.stderr, "turn 3  agent stops p1 ("+s.start[:40]) || !strings.Contains(r.stderr, ") before verifying  exit ") {
		t.Errorf("no progress line for the agent's stop")
	}
	for _, pid := range pids {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && strings.Contains(string(b), s.dir) {
			t.Errorf("process %d is still there: %q", pid, b)
		}
	}
}

func TestAgentStopsTheServerWhenTheRunTimesOut(t *testing.T) {
	t.Parallel()
	requireLoopback(t)
	s := newServer(t)
	model := looptest.New(t, looptest.Step{Calls: s.setup()})
	model.Repeat = &looptest.Step{Delay: 20 * time.Second}
	start := time.Now()
	r := runAgent(t, model, "", nil, "-goal", "serve a page", "-verify", s.verify(""), "-timeout", "3s")
	r.want(t, exitNotMet, loop.OutcomeNotMet, loop.StopTimeout)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("a 3 s run took %v", d)
	}
	stops := eventsOf(r, "stop_process")
	if len(stops) != 1 || stops[0].Reason != loop.StopAtEnd || stops[0].Outcome != loop.CallOK {
		t.Errorf("stop_process events = %+v; want one at the end, after the deadline", stops)
	}
	if !strings.Contains(r.stderr, "at the end of the run  exit ") {
		t.Errorf("no progress line for the agent's stop")
	}
	if pids := hostPIDs(s.dir); len(pids) != 0 {
		t.Errorf("processes left on the host: %v", pids)
	}
}
