package main

// Fuzz targets of the filesystem server's entry points: its HTTP endpoint and its stdio line transport, in front of
// its real tools over a temporary workspace. After every input the server must still list the workspace.
//
//	go test ./servers/filesystem -run '^$' -fuzz '^FuzzHTTPEntry$' -fuzztime 60s
//	go test ./servers/filesystem -run '^$' -fuzz '^FuzzStdioEntry$' -fuzztime 60s

import (
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func fuzzServer(f *testing.F) *mcp.Server {
	g, err := pathguard.Open(f.TempDir(), pathguard.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { g.Close() })
	return fsserver.New(g, fsserver.Options{}).Server()
}

var listProbe = mcptest.Probe{Tool: protocol.ToolListFiles, Arguments: map[string]any{}}

func FuzzHTTPEntry(f *testing.F) {
	mcptest.FuzzHTTP(f, fuzzServer(f), mcpserve.Config{}, listProbe)
}

func FuzzStdioEntry(f *testing.F) {
	mcptest.FuzzStdio(f, fuzzServer(f), mcpserve.Config{}, listProbe)
}
