package main

import (
	"testing"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/agent/sandbox/sandboxtest"
)

// startServers runs both servers as a deployment would (each its own HTTP server, with a bearer token) over ws.
func startServers(t *testing.T, ws, token string) (fsURL, execURL string) {
	t.Helper()
	st := sandboxtest.Start(t, ws, token)
	return st.FS.URL, st.Exec.URL
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
