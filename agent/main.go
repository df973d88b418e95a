// Command agent is goalbox's coding agent: it pursues one goal with an OpenAI-compatible model in a sandbox made
// of the goalbox filesystem and executor MCP servers, in an implement → test → improve loop.
//
//	OPENAI_API_KEY=... go run ./agent -goal "make the tests in ./calc pass" -verify "go test ./calc/..."
//
// With no -fs-url/-exec-url both servers run inside this process over -workspace. Exit status: 0 the goal was
// met (verified), 1 it was not (or could not be verified), 2 a configuration or infrastructure error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/caarlos0/env/v11"
	"github.com/goalbox/goalbox/pkg/mcpserve"
)

// Exit statuses.
const (
	exitMet    = 0
	exitNotMet = 1
	exitError  = 2
)

func main() {
	mcpserve.TuneGC() // as the filesystem server: a small live heap, and each tool call churns through JSON
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env.ToMap(os.Environ()), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command, separated from the process so tests can call it: it parses the options, picks the
// mode and returns the exit status.
func run(ctx context.Context, args []string, environ map[string]string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, environ, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitMet
	}
	if err != nil {
		fmt.Fprintf(stderr, "agent: %v\n", err)
		return exitError
	}
	switch {
	case o.Benchmarks:
		return runBenchmarks(ctx, o, args, stdout, stderr)
	case o.SelfTest:
		return runSelfTest(ctx, o, stdout, stderr)
	}
	return runGoal(ctx, o, stdin, stdout, stderr)
}
