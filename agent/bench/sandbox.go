package bench

import (
	"context"
	"log/slog"
	"math"
	"path/filepath"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/assemble"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
)

// SandboxFactory opens a sandbox over a workspace root; close releases it. The grader runs its commands in one
// (through sandbox_run_command, confined exactly as the model's commands are), the model works in another.
type SandboxFactory func(ctx context.Context, root string) (sb loop.Sandbox, close func() error, err error)

// LocalSandbox starts both goalbox servers in-process over each workspace root, as the agent does for a goal, with
// the local backend (namespaces, Landlock, rlimits, scrubbed environment). Commands keep their home and build caches
// in cacheDir: each workspace gets its own home, and the build caches are shared between the exercises of a run
// (cacheDir/shared), so Go does not rebuild its standard library for each one. Commands may also read the shared
// JavaScript modules, which live outside the system folders the backend opens by default.
//
// The grader's sandbox and the model's must not share a cacheDir: whatever a model leaves in its caches (a
// usercustomize.py in its home, a forged build cache entry) then cannot reach the tests that grade it. The grader's
// is GraderCacheDir.
func LocalSandbox(tc Toolchains, cacheDir string, logger *slog.Logger) SandboxFactory {
	return LocalAgentSandbox(tc, cacheDir, "", logger)
}

// LocalAgentSandbox is LocalSandbox for the model, whose filesystem server keeps its checkpoint stores (the
// model's own and the runner's between tries, keep.go) in checkpointDir, one per workspace; "" is the server's
// default, the user's cache. A run puts them in its run folder: they live as long as the run's results, and
// outside the workspaces and the model's cache folder, where no command reaches.
func LocalAgentSandbox(tc Toolchains, cacheDir, checkpointDir string, logger *slog.Logger) SandboxFactory {
	return func(ctx context.Context, root string) (loop.Sandbox, func() error, error) {
		h, err := sandbox.Host(ctx, sandbox.LocalOptions{Workspace: root, Logger: logger, Executor: assemble.Options{CacheDir: cacheDir,
			Local: local.Config{SharedCacheDir: filepath.Join(cacheDir, "shared"), ExtraReadDirs: tc.readDirs()}},
			Checkpoints: fsserver.CheckpointOptions{Dir: checkpointDir}})
		if err != nil {
			return nil, nil, err
		}
		return h, h.Close, nil
	}
}

// runCommand runs command from cwd (relative to the workspace root) in sb and returns its exit code (-1 when it
// was killed: a timeout, a cancellation) and its stdout followed by its stderr. err is for the sandbox failing or
// refusing the command, not for a command that exits non-zero.
func runCommand(ctx context.Context, sb loop.Sandbox, command, cwd string, timeout time.Duration) (exitCode int, output string, err error) {
	in := protocol.RunCommandInput{Command: command, Cwd: cwd, TimeoutSeconds: int(math.Ceil(timeout.Seconds()))}
	out, _, err := loop.RunCommand(ctx, sb, in)
	if err != nil {
		return 0, "", err
	}
	return out.ExitCode, loop.CommandOutput(out), nil
}

// GraderCacheDir is the grading sandbox's home and build caches: a folder of its own, not the executor's default,
// which the agent's in-process servers in the goal mode use. A model's command could otherwise leave something
// there (a usercustomize.py that prints a pytest success and exits 0) that a later grade would run.
func GraderCacheDir() string { return filepath.Join(CacheDir(), "grader-sandbox") }

// readDirs are the folders outside the system ones that test commands must read: the shared JavaScript modules
// (and where their symlink leads). Both the grader's sandbox and the agent's get them.
func (tc Toolchains) readDirs() []string {
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

// protocolOutput is a command output of stdout and stderr, for loop.CommandOutput.
func protocolOutput(stdout, stderr string) protocol.RunCommandOutput {
	return protocol.RunCommandOutput{Stdout: stdout, Stderr: stderr}
}
