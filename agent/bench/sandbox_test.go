package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// The grader through the real executor (local backend, confined) over a real MCP client session.
func TestGradeThroughExecutor(t *testing.T) {
	langs := []string{"go", "python"}
	if v := os.Getenv("GOALBOX_EXECUTOR_LANGS"); v != "" {
		langs = strings.Split(v, ",")
	}
	dir := benchmarkDir(t)
	var exs []Exercise
	for _, l := range langs {
		some, err := Discover(dir, Filter{Languages: []string{l}, Seed: 3, Limit: 1})
		must(t, err)
		exs = append(exs, some...)
	}
	g := NewGrader()
	g.Toolchains.CompilerCache = true
	results, err := SelfTest(context.Background(), SelfTestOptions{
		Exercises: exs, RunDir: t.TempDir(), Workers: 2, Grader: g,
		Sandbox: inProcessSandbox(g.Toolchains, GraderCacheDir()),
	})
	must(t, err)
	for _, r := range results {
		if r.Status == SelfUngradable && r.Lang != "go" && r.Lang != "python" {
			t.Logf("%s: %s", r.ID, r.Reason) // a finding about this machine, not a grader bug
			continue
		}
		if r.Status != SelfOK {
			t.Errorf("%s: %s %s\nreference:\n%s\nstub:\n%s", r.ID, r.Status, r.Reason, tail(r.Ref.Output, 2000), tail(r.Stub.Output, 1000))
		}
	}
}

func TestInProcessSandboxRunsCommands(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(root+"/sub", 0o755))
	sb, closeSB, err := inProcessSandbox(DefaultToolchains(), GraderCacheDir())(context.Background(), root)
	must(t, err)
	defer closeSB()
	code, out, err := runCommand(context.Background(), sb, "pwd; echo out; echo err >&2; exit 3", "sub", 10*time.Second)
	must(t, err)
	if code != 3 || !strings.Contains(out, "out\n") || !strings.Contains(out, "err") || !strings.HasSuffix(strings.SplitN(out, "\n", 2)[0], "/sub") {
		t.Errorf("exit %d output %q", code, out)
	}
	start := time.Now()
	code, _, err = runCommand(context.Background(), sb, "sleep 30", ".", 1*time.Second)
	must(t, err)
	if code != -1 || time.Since(start) > 10*time.Second {
		t.Errorf("timeout: exit %d after %v", code, time.Since(start))
	}
	if _, _, err := runCommand(context.Background(), sb, "true", "../outside", time.Second); err == nil {
		t.Error("a cwd outside the workspace was accepted")
	}
}
