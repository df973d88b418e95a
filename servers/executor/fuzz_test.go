package main

// Fuzz targets of the executor's entry points: its HTTP endpoint and its stdio line transport, in front of its
// real tool and input checks. Commands go to a stub backend that runs nothing: random bytes must not become random
// processes (a mutated "true" can become "yes"), and the backends have tests of their own. After every input the
// server must still run a command.
//
//	go test ./servers/executor -run '^$' -fuzz '^FuzzHTTPEntry$' -fuzztime 60s
//	go test ./servers/executor -run '^$' -fuzz '^FuzzStdioEntry$' -fuzztime 60s

import (
	"context"
	"io"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stubBackend "runs" a command by printing it.
type stubBackend struct{}

func (stubBackend) Name() string { return "stub" }
func (stubBackend) Run(ctx context.Context, req backend.Request) (backend.Result, error) {
	_, _ = io.WriteString(req.Stdout, req.Command)
	if ctx.Err() != nil {
		return backend.Result{ExitCode: -1}, nil
	}
	return backend.Result{}, nil
}
func (stubBackend) Confinement() protocol.Confinement {
	return protocol.Confinement{LocalConfinement: &protocol.LocalConfinement{}} // runs nothing: every value unknown
}
func (stubBackend) Close() error { return nil }

func fuzzServer(f *testing.F) *mcp.Server {
	g, err := pathguard.Open(f.TempDir(), pathguard.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { g.Close() })
	ex, err := execserver.New(execserver.Config{}, stubBackend{}, g, nil)
	if err != nil {
		f.Fatal(err)
	}
	return ex.Server()
}

var runProbe = mcptest.Probe{Tool: protocol.ToolRunCommand, Arguments: map[string]any{"command": "true"}}

func FuzzHTTPEntry(f *testing.F) {
	mcptest.FuzzHTTP(f, fuzzServer(f), mcpserve.Config{}, runProbe)
}

func FuzzStdioEntry(f *testing.F) {
	mcptest.FuzzStdio(f, fuzzServer(f), mcpserve.Config{}, runProbe)
}
