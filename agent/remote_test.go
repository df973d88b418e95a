package main

import (
	"testing"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
)

// startServers runs both servers as a deployment would (each its own HTTP server, with a bearer token) over ws.
func startServers(t *testing.T, ws, token string) (fsURL, execURL string) {
	t.Helper()
	st := startStack(t, ws, token)
	return st.fsURL, st.execURL
}

// stack is one sandbox stack: a filesystem server and an executor over one workspace, each on its own loopback
// port, as deploy/compose.yaml runs them.
type stack struct {
	ws             string
	fsURL, execURL string
	closers        []func() error
}

// kill stops both servers and releases the workspace, as a stack that goes down does; it is also the cleanup.
func (s *stack) kill() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

func startStack(t *testing.T, ws, token string) *stack {
	t.Helper()
	st := &stack{ws: ws}
	t.Cleanup(st.kill)
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.closers = append(st.closers, g.Close)
	backend, err := local.New(local.Config{Workspace: g.Dir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.closers = append(st.closers, backend.Close)
	exec, err := execserver.New(execserver.Config{}, backend, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.closers = append(st.closers, func() error { exec.Close(); return nil })
	cfg := mcpserve.Config{Addr: "127.0.0.1:0", Token: token}
	fs, err := mcpserve.Start(fsserver.New(g, fsserver.Options{}).Server(), cfg, mcpserve.NoHealth, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.closers = append(st.closers, fs.Close)
	ex, err := mcpserve.Start(exec.Server(), cfg, mcpserve.NoHealth, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.closers = append(st.closers, ex.Close)
	st.fsURL, st.execURL = fs.URL, ex.URL
	return st
}

func TestRunningServersWithTokens(t *testing.T) {
	ws := t.TempDir()
	fsURL, execURL := startServers(t, ws, "s3cret")
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("hello.txt", "hi\n")}},
		looptest.Step{Content: "done"},
	)
	// The workspace flag is ignored with server URLs: the servers' own workspace is where the file must land.
	r := runAgent(t, model, "", nil, "-goal", "write hello.txt", "-verify", "grep -q hi hello.txt",
		"-fs-url", fsURL, "-exec-url", execURL, "-token", "s3cret")
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)

	wrong := looptest.New(t)
	r = runAgent(t, wrong, "", nil, "-goal", "x", "-fs-url", fsURL, "-exec-url", execURL, "-token", "wrong")
	if r.code != exitError || len(wrong.Requests()) != 0 {
		t.Errorf("a wrong token should stop the agent before the model is asked: exit %d", r.code)
	}
}
