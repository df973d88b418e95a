// Package sandboxtest runs the two servers as a deployment does, each its own HTTP server on loopback with a bearer
// token, for the tests of the agent's paths to servers running elsewhere (the servers the agent hosts itself are
// reached in memory and have no port: sandbox.Local).
package sandboxtest

import (
	"testing"

	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
)

// Stack is one sandbox stack: a filesystem server and an executor (local backend) over one workspace, each on its
// own loopback port, as deploy/compose.yaml runs them.
type Stack struct {
	// Workspace is the host folder both servers are confined to.
	Workspace string
	// FS and Exec are the servers' endpoints, with the token they require.
	FS, Exec sandbox.Endpoint
	closers  []func() error
}

// Start starts a stack over ws; token "" has each server generate its own, as the servers' commands do. The stack
// is killed at the test's end, or earlier by Kill.
func Start(t testing.TB, ws, token string) *Stack {
	t.Helper()
	st := &Stack{Workspace: ws}
	t.Cleanup(st.Kill)
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
	// The checkpoint store in the test's folder, not the user's cache.
	files := fsserver.New(g, fsserver.Options{Checkpoints: fsserver.CheckpointOptions{Dir: t.TempDir()}})
	cfg := mcpserve.Config{Addr: "127.0.0.1:0", Token: token}
	fs, err := mcpserve.Start(files.Server(), cfg, files.Health, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.closers = append(st.closers, fs.Close)
	ex, err := mcpserve.Start(exec.Server(), cfg, exec.Health, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.closers = append(st.closers, ex.Close)
	st.FS, st.Exec = sandbox.Endpoint{URL: fs.URL, Token: fs.Token}, sandbox.Endpoint{URL: ex.URL, Token: ex.Token}
	return st
}

// Kill stops both servers and releases the workspace, as a stack that goes down does.
func (s *Stack) Kill() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}
