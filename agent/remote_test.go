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
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	backend, err := local.New(local.Config{Workspace: g.Dir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	exec, err := execserver.New(execserver.Config{}, backend, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mcpserve.Config{Addr: "127.0.0.1:0", Token: token}
	fs, err := mcpserve.Start(fsserver.New(g, fsserver.Options{}).Server(), cfg, mcpserve.NoHealth, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	ex, err := mcpserve.Start(exec.Server(), cfg, mcpserve.NoHealth, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	return fs.URL, ex.URL
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
