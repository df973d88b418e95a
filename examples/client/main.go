// Command client uses both goalbox servers from Go with the official MCP SDK: it writes a file through the
// filesystem server and runs a command that reads it through the executor. Start the servers first (docs/install.md):
// each prints the bearer token it generated (and writes it to a file only you can read); give them here, or in the
// environment (GOALBOX_FS_TOKEN, GOALBOX_EXEC_TOKEN), which ps does not show.
//
//	go run ./examples/client -fs http://127.0.0.1:7101/mcp -exec http://127.0.0.1:7102/mcp
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	fsURL := flag.String("fs", "http://127.0.0.1:7101/mcp", "the filesystem server's MCP endpoint")
	execURL := flag.String("exec", "http://127.0.0.1:7102/mcp", "the executor server's MCP endpoint")
	fsToken := flag.String("fs-token", os.Getenv("GOALBOX_FS_TOKEN"), "the filesystem server's bearer token (default $GOALBOX_FS_TOKEN)")
	execToken := flag.String("exec-token", os.Getenv("GOALBOX_EXEC_TOKEN"), "the executor's bearer token (default $GOALBOX_EXEC_TOKEN)")
	flag.Parse()
	tokens := map[string]string{*fsURL: *fsToken, *execURL: *execToken}
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "goalbox-example", Version: "1"}, nil)

	// call runs one tool on the server at url and returns its structured result, or exits with its error.
	call := func(url, tool string, args map[string]any) map[string]any {
		// The servers require "Authorization: Bearer <token>" on every request.
		hc := &http.Client{Transport: bearer{token: tokens[url], next: http.DefaultTransport}}
		session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
		if err != nil {
			log.Fatalf("connect %s: %v", url, err)
		}
		defer session.Close()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			log.Fatalf("%s: %v", tool, err)
		}
		if res.IsError { // the tool refused: its text says why
			log.Fatalf("%s: %s", tool, res.Content[0].(*mcp.TextContent).Text)
		}
		return res.StructuredContent.(map[string]any)
	}

	call(*fsURL, "sandbox_write_file", map[string]any{"path": "hello.txt", "content": "hello from goalbox\n"})
	out := call(*execURL, "sandbox_run_command", map[string]any{"command": "wc -c hello.txt && cat hello.txt"})
	fmt.Printf("exit %v\n%s", out["exit_code"], out["stdout"])
}

// bearer sends the token on every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}
