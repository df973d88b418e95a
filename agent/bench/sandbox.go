package bench

import (
	"context"
	"math"
	"path/filepath"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// SandboxFactory opens a sandbox over a workspace root; close releases it. The grader runs its commands in one
// (through sandbox_run_command, confined exactly as the model's commands are), the model works in another. The
// caller makes them: the agent's benchmark program starts both servers in-process over each root
// (sandbox.PerWorkspace), or gives a pool of running ones (RemoteSandbox).
type SandboxFactory func(ctx context.Context, root string) (sb loop.Sandbox, close func() error, err error)

// runCommand runs command from cwd (relative to the workspace root) in sb and returns its exit code (-1 when it
// was killed: a timeout, a cancellation) and its stdout followed by its stderr. err is for the sandbox failing or
// refusing the command, not for a command that exits non-zero.
func runCommand(ctx context.Context, sb loop.Sandbox, command, cwd string, timeout time.Duration) (exitCode int, output string, err error) {
	out, err := runCommandStdin(ctx, sb, command, cwd, "", timeout)
	if err != nil {
		return 0, "", err
	}
	return out.ExitCode, loop.CommandOutput(out), nil
}

// GraderCacheDir is the grading sandbox's home and build caches: a folder of its own, not the executor's default,
// which the agent's in-process servers in the goal mode use. A model's command could otherwise leave something
// there (a usercustomize.py that prints a pytest success and exits 0) that a later grade would run.
func GraderCacheDir() string { return filepath.Join(CacheDir(), "grader-sandbox") }

// ReadDirs are the folders outside the system ones that test commands must read: the shared JavaScript modules
// (and where their symlink leads). Both the grader's sandbox and the model's must be given them.
func (tc Toolchains) ReadDirs() []string {
	var extra []string
	if tc.JSModules != "" {
		extra = append(extra, filepath.Dir(tc.JSModules))
		if real, err := filepath.EvalSymlinks(tc.JSModules); err == nil {
			extra = append(extra, filepath.Dir(real))
		}
	}
	return extra
}

// runCommandStdin is runCommand with text on the command's standard input, returning the streams apart: the grade
// gives the nonce this way and reads its trailer from stdout alone.
func runCommandStdin(ctx context.Context, sb loop.Sandbox, command, cwd, stdin string, timeout time.Duration) (protocol.RunCommandOutput, error) {
	in := protocol.RunCommandInput{Command: command, Cwd: cwd, Stdin: stdin, TimeoutSeconds: int(math.Ceil(timeout.Seconds()))}
	out, _, err := loop.RunCommand(ctx, sb, in)
	return out, err
}
