package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goalbox/goalbox/agent/bench/benchtest"
	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// benchmarkDir is the pinned polyglot-benchmark checkout, or a skip (benchtest.Dir).
func benchmarkDir(t testing.TB) string { return benchtest.Dir(t) }

// localSandbox runs commands on the host with sh -c in a process group that is killed on timeout. It is a test
// double for the executor's sandbox_run_command (the only tool it offers; stdout carries both streams) and must never be used
// to grade a model: it confines nothing.
type localSandbox struct {
	root string
	cpu  *cpuMeter // optional: adds up the CPU time commands use
	lang string
}

func (s localSandbox) Tools() []loop.Tool { return []loop.Tool{{Name: protocol.ToolRunCommand}} }

func (s localSandbox) Call(ctx context.Context, name string, args json.RawMessage) (loop.ToolResult, error) {
	var in protocol.RunCommandInput
	if err := json.Unmarshal(args, &in); err != nil || name != protocol.ToolRunCommand {
		return loop.ToolResult{IsError: true, Text: fmt.Sprintf("only %s with its input is offered here", protocol.ToolRunCommand)}, nil
	}
	code, out, err := s.runIn(ctx, in.Command, in.Cwd, in.Stdin, time.Duration(in.TimeoutSeconds)*time.Second)
	if err != nil {
		return loop.ToolResult{}, err
	}
	raw, err := json.Marshal(protocol.RunCommandOutput{ExitCode: code, Stdout: out, TimedOut: code == -1})
	return loop.ToolResult{Structured: raw}, err
}

// cpuMeter adds up, per language, the user+system CPU time of the commands run and of every descendant they
// waited for: a figure that, unlike wall time, does not depend on what else the machine is doing.
type cpuMeter struct {
	mu     sync.Mutex
	byLang map[string]time.Duration
}

// factory opens local sandboxes that report to m; the language is read from the root's place in the run
// folder (work/<lang>/<slug>).
func (m *cpuMeter) factory(_ context.Context, root string) (loop.Sandbox, func() error, error) {
	return localSandbox{root: root, cpu: m, lang: filepath.Base(filepath.Dir(root))}, func() error { return nil }, nil
}

func (m *cpuMeter) add(lang string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byLang == nil {
		m.byLang = map[string]time.Duration{}
	}
	m.byLang[lang] += d
}

// run is the command itself, exit code -1 when the timeout killed it.
func (s localSandbox) run(ctx context.Context, command, cwd string, timeout time.Duration) (int, string, error) {
	return s.runIn(ctx, command, cwd, "", timeout)
}

// runIn is run with stdin on the command's standard input.
func (s localSandbox) runIn(ctx context.Context, command, cwd, stdin string, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = filepath.Join(s.root, filepath.FromSlash(cwd))
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	newProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if s.cpu != nil && cmd.ProcessState != nil {
			s.cpu.add(s.lang, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), out.String(), nil
		}
		return 0, out.String(), err
	case <-ctx.Done():
		killProcessGroup(cmd)
		<-done
		return -1, out.String(), nil
	}
}
