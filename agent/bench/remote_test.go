package bench

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"

	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/agent/sandbox/sandboxtest"
)

// startRemote starts both servers on loopback over a workspace of their own and returns them as a remote pool
// sandbox (reached over HTTP through their tools only) and the workspace's host path.
func startRemote(t *testing.T, name string) (PoolSandbox, string) {
	t.Helper()
	st := sandboxtest.Start(t, t.TempDir(), "")
	return RemoteSandbox(name, st.FS, st.Exec), st.Workspace
}

// A remote sandbox grades as a local one: a model that replaces the tests and plants a conftest.py fails, the
// restored test file is reported, the model's own extra file (a helper) is kept, and the result names the sandbox.
// The sandbox's workspace holds only the exercise as graded: what was there before the run is gone.
func TestRemoteSandboxRestoresTests(t *testing.T) {
	exs := runnerExercises(t)
	py := exs[3] // python/proverb
	sb, ws := startRemote(t, "remote-1")
	must(t, os.WriteFile(filepath.Join(ws, "left-over.txt"), []byte("from an earlier exercise"), 0o644))
	calls := []looptest.Call{
		{Name: "sandbox_write_file", Args: looptest.Args(map[string]string{"path": path.Join(py.Slug, py.Test[0]), "content": "def test_fine():\n    pass\n"})},
		{Name: "sandbox_write_file", Args: looptest.Args(map[string]string{"path": path.Join(py.Slug, "conftest.py"), "content": "import pytest\n"})},
		{Name: "sandbox_write_file", Args: looptest.Args(map[string]string{"path": path.Join(py.Slug, "helper.py"), "content": "X = 1\n"})},
	}
	opts, _ := newRunOptions(t, []Exercise{py}, looptest.Step{Calls: calls}, done)
	opts.Pool, opts.Tries = NewPool(sb), 1
	report, err := Run(context.Background(), opts)
	must(t, err)
	if len(report.Results) != 1 {
		t.Fatalf("results: %+v", report.Results)
	}
	r := report.Results[0]
	if r.Sandbox != "remote-1" || len(r.Tries) != 1 || r.Tries[0].Passed || r.Tries[0].Error != "" ||
		!slices.Contains(r.Tries[0].Restored, path.Join(py.Slug, py.Test[0])) || !slices.Contains(r.Tries[0].Restored, path.Join(py.Slug, "conftest.py")) {
		t.Errorf("result %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "left-over.txt")); err == nil {
		t.Error("the workspace was not emptied before the exercise")
	}
	if _, err := os.Stat(filepath.Join(ws, py.Slug, "conftest.py")); err == nil {
		t.Error("the planted conftest.py is still in the sandbox")
	}
	if _, err := os.Stat(filepath.Join(ws, py.Slug, "helper.py")); err != nil {
		t.Errorf("the model's helper file is gone from the sandbox: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(ws, py.Slug, py.Test[0]))
	must(t, err)
	want, err := os.ReadFile(filepath.Join(py.Dir, py.Test[0]))
	must(t, err)
	if string(got) != string(want) {
		t.Error("the sandbox's test file is not the pristine one after grading")
	}
	if _, err := os.Stat(filepath.Join(ws, py.Slug, ".meta")); err == nil {
		t.Error(".meta was uploaded")
	}
}

// A sandbox whose servers are gone is drained and the exercise runs on the next, with no try counted.
func TestRemoteSandboxDownIsDrained(t *testing.T) {
	exs := runnerExercises(t)
	py := exs[3]
	good, _ := startRemote(t, "good")
	st := sandboxtest.Start(t, t.TempDir(), "")
	bad := RemoteSandbox("bad", st.FS, st.Exec)
	st.Kill()
	opts, _ := newRunOptions(t, []Exercise{py}, looptest.Step{Calls: referenceCalls(t, py)}, done)
	opts.Pool, opts.Tries = NewPool(bad, good), 1
	var drained []string
	opts.Pool.OnDrain = func(name string, err error, left int) { drained = append(drained, name) }
	report, err := Run(context.Background(), opts)
	must(t, err)
	if r := report.Results[0]; r.Sandbox != "good" || len(r.Tries) != 1 || !r.Tries[0].Passed || !slices.Equal(drained, []string{"bad"}) {
		t.Errorf("result %+v, drained %v", r, drained)
	}
}
