package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClient runs examples/client against both servers on loopback: it writes hello.txt through the filesystem
// server and reads it back with a command through the executor, and the file is in the shared workspace.
func TestClient(t *testing.T) {
	bin, ws := t.TempDir(), t.TempDir()
	buildServers(t, bin)
	fsURL, fsToken := serve(t, filepath.Join(bin, "filesystem"), ws)
	execURL, execToken := serve(t, filepath.Join(bin, "executor"), ws)

	// Without the tokens the servers refuse the client (the run below, with them, is the positive control).
	if out, err := exec.Command("go", "run", "./client", "-fs", fsURL, "-exec", execURL).CombinedOutput(); err == nil || !strings.Contains(string(out), "Unauthorized") {
		t.Errorf("the client without tokens: %v\n%s", err, out)
	}
	cmd := exec.Command("go", "run", "./client", "-fs", fsURL, "-exec", execURL)
	cmd.Env = append(os.Environ(), "GOALBOX_FS_TOKEN="+fsToken, "GOALBOX_EXEC_TOKEN="+execToken)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./client: %v\n%s", err, out)
	}
	if want := "exit 0\n19 hello.txt\nhello from goalbox\n"; string(out) != want {
		t.Errorf("the client printed %q, want %q", out, want)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hello from goalbox\n" {
		t.Errorf("hello.txt in the workspace: %q, %v", b, err)
	}
}
