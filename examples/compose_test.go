package examples_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestComposeOverride brings deploy/compose.yaml up with examples/compose/host-workspace.yaml over a host folder and
// runs examples/client against the containers: the file it writes lands in that folder. It builds the images
// (minutes the first time), so like agent/compose_test.go it runs only with GOALBOX_COMPOSE_TEST=1, which
// scripts/test.sh sets as root and in CI; there a missing Docker or Compose fails it.
func TestComposeOverride(t *testing.T) {
	if os.Getenv("GOALBOX_COMPOSE_TEST") != "1" {
		t.Skip("SKIPPED, the compose override was not run: set GOALBOX_COMPOSE_TEST=1 to build the images and run " +
			"deploy/compose.yaml with examples/compose/host-workspace.yaml (needs Docker and Compose v2: sudo scripts/setup-docker.sh)")
	}
	if out, err := exec.Command("docker", "compose", "version").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("compose override: no Docker Compose v2 (%v: %s); run sudo scripts/setup-docker.sh", err, strings.TrimSpace(string(out)))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED: " + msg)
	}
	// The host folder must be writable by the servers' uid 10001, as the override's comment tells users.
	ws := t.TempDir()
	if err := os.Chown(ws, 10001, 10001); err != nil {
		if err := os.Chmod(ws, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	token := rand.Text()
	// Cleanups run last first: this one, registered before compose down's, ends the context after it.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	compose := func(args ...string) (string, error) {
		base := []string{"compose", "-f", "../deploy/compose.yaml", "-f", "compose/host-workspace.yaml",
			"-p", fmt.Sprintf("goalbox-example-%d", os.Getpid())}
		cmd := exec.CommandContext(ctx, "docker", append(base, args...)...)
		cmd.Env = append(os.Environ(),
			"COMPOSE_BAKE=false",   // build with the engine's BuildKit; buildx is not installed by setup-docker.sh
			"GOALBOX_TOKEN="+token, // one token for both servers, which the client sends
			"GOALBOX_WORKSPACE_DIR="+ws,
			// Ports the Engine picks when it publishes them, read back below: a port found free before the build
			// (minutes) could be taken by then by whatever runs beside.
			"GOALBOX_FS_PORT=0", "GOALBOX_EXEC_PORT=0")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := compose("logs", "--no-color", "--tail", "50")
			t.Logf("compose logs:\n%s", logs)
		}
		if out, err := compose("down", "-v", "--remove-orphans", "--timeout", "5"); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	})
	if out, err := compose("up", "-d", "--build", "--wait", "--wait-timeout", "120"); err != nil {
		t.Fatalf("compose up with the override: %v\n%s", err, out)
	}
	published := func(service, port string) string {
		out, err := compose("port", service, port)
		addr := strings.TrimSpace(out)
		if err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Fatalf("compose port %s %s: %v %q", service, port, err, out)
		}
		return addr
	}
	fsAddr, execAddr := published("filesystem", "7101"), published("executor", "7102")

	out, err := exec.CommandContext(ctx, "go", "run", "./client",
		"-fs", "http://"+fsAddr+"/mcp", "-fs-token", token,
		"-exec", "http://"+execAddr+"/mcp", "-exec-token", token).CombinedOutput()
	if err != nil || string(out) != "exit 0\n19 hello.txt\nhello from goalbox\n" {
		t.Fatalf("go run ./client against the containers: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hello from goalbox\n" {
		t.Errorf("hello.txt in the host folder: %q, %v", b, err)
	}
}
