package main

import (
	"path/filepath"

	"github.com/goalbox/goalbox/agent/bench"
	"github.com/goalbox/goalbox/agent/sandbox"
)

// The benchmark's in-process sandboxes: both servers started over each exercise's copy, with the local backend.
// Commands keep their homes and build caches in a cache folder, and may read the shared JavaScript modules, which
// live outside the system folders the backend opens by default.
//
// The grader's sandbox and the model's never share a cache folder: whatever a model leaves in its caches (a
// usercustomize.py in its home, a forged build cache entry) then cannot reach the tests that grade it.

// graderSandbox is where the grader runs the tests: its cache folder is bench.GraderCacheDir, kept between runs.
func graderSandbox(tc bench.Toolchains) bench.SandboxFactory {
	return sandbox.PerWorkspace(sandbox.PerWorkspaceOptions{CacheDir: bench.GraderCacheDir(), ExtraReadDirs: tc.ReadDirs()})
}

// modelSandbox is where the model works: its caches and its filesystem server's checkpoint stores (the model's
// own and the runner's between tries) are in the run folder, where they live as long as the run's results, outside
// the workspaces and out of every command's reach.
func modelSandbox(tc bench.Toolchains, runDir string) bench.SandboxFactory {
	return sandbox.PerWorkspace(sandbox.PerWorkspaceOptions{CacheDir: filepath.Join(runDir, "sandbox-cache"),
		CheckpointDir: filepath.Join(runDir, "checkpoints"), ExtraReadDirs: tc.ReadDirs()})
}
