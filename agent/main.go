// Command agent is goalbox's coding agent: it pursues one goal with an OpenAI-compatible model in a sandbox made
// of the goalbox filesystem and executor MCP servers, in an implement → test → improve loop.
//
//	OPENAI_API_KEY=... go run ./agent -goal "make the tests in ./calc pass" -verify "go test ./calc/..."
//
// With no -fs-url/-exec-url both servers run inside this process over -workspace. Exit status: 0 the goal was
// met (verified), 1 it was not (or could not be verified), 2 a configuration or infrastructure error, 130 the run
// was interrupted (Ctrl-C: the sandbox's commands are stopped first; a second Ctrl-C exits at once).
//
// The same command runs the Aider Polyglot benchmark with a model (-benchmarks) and proves the benchmark's grader
// (-selftest): three programs, each with its own options (programs.go).
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
	exitMet         = 0
	exitNotMet      = 1
	exitError       = 2
	exitInterrupted = 130 // 128 + SIGINT, as shells report a command ended by Ctrl-C
)

func main() {
	mcpserve.TuneGC() // as the filesystem server: a small live heap, and each tool call churns through JSON
	ctx, cancel := context.WithCancel(context.Background())
	interrupts(cancel, os.Stderr, os.Exit)
	code := run(ctx, os.Args[1:], env.ToMap(os.Environ()), os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code)
}

// interrupts makes the first Ctrl-C (or SIGTERM) cancel the run, which stops the sandbox's commands, writes the
// summary and exits 130; a second Ctrl-C calls exit(130) at once, for a person who will not wait for that. A
// second SIGTERM does not: supervisors deliver one TERM twice (GNU timeout signals the command and then its
// process group, so `timeout 60 go run ./agent` gets it from timeout and from go run), and a supervisor that will
// not wait sends SIGKILL. stop ends the handling (for tests).
func interrupts(cancel context.CancelFunc, stderr io.Writer, exit func(int)) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for n := 0; ; n++ {
			var sig os.Signal
			select {
			case <-done:
				return
			case sig = <-sigs:
			}
			if n == 0 {
				fmt.Fprintln(stderr, "agent: interrupted: stopping the sandbox's commands (Ctrl-C again to exit at once)")
				cancel()
				continue
			}
			if sig == syscall.SIGTERM {
				continue // the same request again: the summary is still written
			}
			fmt.Fprintln(stderr, "agent: interrupted twice: exiting now")
			exit(exitInterrupted)
			return
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// run is the whole command, separated from the process so tests can call it: it chooses the program
// (programs.go), parses that program's options and returns the exit status of its run.
func run(ctx context.Context, args []string, environ map[string]string, stdin io.Reader, stdout, stderr io.Writer) int {
	p, err := chooseProgram(args, environ)
	if err != nil {
		return usageFailed(err, stderr)
	}
	switch p {
	case nil:
		printPrograms(stderr)
		return exitMet
	case benchmarkProgram:
		o, err := parseBenchmarkOptions(args, environ, stderr)
		if err != nil {
			return usageFailed(err, stderr)
		}
		return runBenchmarks(ctx, o, args, stdout, stderr)
	case selfTestProgram:
		o, err := parseSelfTestOptions(args, environ, stderr)
		if err != nil {
			return usageFailed(err, stderr)
		}
		return runSelfTest(ctx, o, stdout, stderr)
	}
	o, err := parseGoalOptions(args, environ, stderr)
	if err != nil {
		return usageFailed(err, stderr)
	}
	return runGoal(ctx, o, stdin, stdout, stderr)
}

// usageFailed is the exit status of options that did not parse: 0 after -h, else 2 after the message.
func usageFailed(err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitMet
	}
	return failed(stderr, "%v", err)
}

// failed says on stderr what went wrong and returns exitError.
func failed(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "agent: "+format+"\n", a...)
	return exitError
}
