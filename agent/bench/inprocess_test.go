package bench

import "github.com/goalbox/goalbox/agent/sandbox"

// inProcessSandbox is the grader's sandbox the agent's benchmark program makes: both servers in-process over each
// workspace, confined by the local backend, with the commands' homes and build caches in cacheDir.
func inProcessSandbox(tc Toolchains, cacheDir string) SandboxFactory {
	return inProcessAgentSandbox(tc, cacheDir, "")
}

// inProcessAgentSandbox is inProcessSandbox for the model, whose checkpoint stores go in checkpointDir.
func inProcessAgentSandbox(tc Toolchains, cacheDir, checkpointDir string) SandboxFactory {
	return sandbox.PerWorkspace(sandbox.PerWorkspaceOptions{CacheDir: cacheDir, CheckpointDir: checkpointDir, ExtraReadDirs: tc.ReadDirs()})
}
