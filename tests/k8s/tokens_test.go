package k8s

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sandboxToken is a sandbox Pod's token for one of its servers ("filesystem", "executor"), derived from the
// master as base/tokens.yaml's derive.py derives it: hex(HMAC-SHA256(master, "goalbox-sandbox-token:v1:<ns>:<pod>:<server>")).
func sandboxToken(master, namespace, pod, server string) string {
	mac := hmac.New(sha256.New, []byte(master))
	fmt.Fprintf(mac, "goalbox-sandbox-token:v1:%s:%s:%s", namespace, pod, server)
	return hex.EncodeToString(mac.Sum(nil))
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// podTarget is how the test reaches a sandbox Pod's server now: its IP (it changes when the Pod is made again)
// and the DNS name the server admits as Host.
func podTarget(t *testing.T, ctl nodeCtl, pod string, port int, token string) *mcpSession {
	ip := strings.TrimSpace(ctl.must(t, nil, "-n", "goalbox", "get", "pod", pod, "-o", "jsonpath={.status.podIP}"))
	return &mcpSession{url: fmt.Sprintf("http://%s:%d/mcp", ip, port), host: pod + ".goalbox-sandbox", token: token}
}

// initializeStatus is the HTTP status of an MCP initialize with the session's token.
func initializeStatus(t *testing.T, s *mcpSession) int {
	code, _ := s.post(t, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "goalbox-k8s-token-test", "version": "1"}}, false)
	return code
}

// outOfCommandsReach checks, from a command run in pod, that neither its executor's token nor the master is in
// the command's reach: the token file the executor mounts is refused to commands (the executor's Landlock rules
// leave /run out), the master and the derivation script are mounted in no container a command runs in, and no
// token is in the command's environment.
func outOfCommandsReach(t *testing.T, ctl nodeCtl, pod, execToken, master string) {
	ex := podTarget(t, ctl, pod, 7102, execToken)
	ex.initialize(t)
	res, isErr := ex.call(t, "sandbox_run_command", map[string]any{"command": "cat /run/goalbox-token/token; ls -d /master /derive; env"})
	out, _ := res["stdout"].(string)
	stderr, _ := res["stderr"].(string)
	if isErr || out == "" || strings.Contains(out, execToken) || strings.Contains(out, master) ||
		!strings.Contains(stderr, "/run/goalbox-token/token: Permission denied") || !strings.Contains(stderr, "/master") {
		t.Fatalf("%s: a command reached a token or the master, or did not run: %v", pod, res)
	}
	t.Logf("%s: a command reading its executor's token and the master gets: %s", pod, strings.TrimSpace(stderr))
}

// tokenPerSandbox: a sandbox Pod's token, leaked (the runner holds every one), is refused by the other Pod's
// servers, each Pod keeping its own (derived from the master, which no server container mounts). The control runs
// the same attack with the protection off: every Pod's init container derives for one shared name, as one token for
// every sandbox was, and the leaked token opens the other Pod.
func tokenPerSandbox(t *testing.T, ctl nodeCtl, master string) {
	a, b := "goalbox-sandbox-0", "goalbox-sandbox-1"
	// The runner's subtest deleted b: its replacement (same name, same tokens) must be Ready first.
	if out, err := ctl.run(nil, "-n", "goalbox", "rollout", "status", "statefulset/goalbox-sandbox", "--timeout=5m"); err != nil {
		t.Fatalf("the sandboxes are not Ready: %v\n%s", err, out)
	}
	outOfCommandsReach(t, ctl, a, sandboxToken(master, "goalbox", a, "executor"), master)
	if code := initializeStatus(t, podTarget(t, ctl, b, 7102, sandboxToken(master, "goalbox", a, "executor"))); code != http.StatusUnauthorized {
		t.Errorf("%s's executor token opened %s's executor: HTTP %d, want 401", a, b, code)
	}
	if code := initializeStatus(t, podTarget(t, ctl, b, 7101, sandboxToken(master, "goalbox", a, "filesystem"))); code != http.StatusUnauthorized {
		t.Errorf("%s's filesystem token opened %s's filesystem server: HTTP %d, want 401", a, b, code)
	}
	if code := initializeStatus(t, podTarget(t, ctl, b, 7102, sandboxToken(master, "goalbox", b, "executor"))); code != http.StatusOK {
		t.Errorf("%s's own token: HTTP %d, want 200", b, code)
	}
	t.Logf("%s's tokens are refused by %s (401); %s's own is taken", a, b, b)

	// Control: one token for every sandbox (each init container derives for the same name).
	start := time.Now()
	const shared = "goalbox-sandbox-shared"
	ctl.must(t, nil, "-n", "goalbox", "patch", "statefulset", "goalbox-sandbox", "--type=json", "-p",
		`[{"op":"test","path":"/spec/template/spec/initContainers/0/env/0/name","value":"POD_NAME"},`+
			`{"op":"replace","path":"/spec/template/spec/initContainers/0/env/0","value":{"name":"POD_NAME","value":"`+shared+`"}}]`)
	if out, err := ctl.run(nil, "-n", "goalbox", "rollout", "status", "statefulset/goalbox-sandbox", "--timeout=5m"); err != nil {
		t.Fatalf("the shared-token sandboxes are not Ready: %v\n%s", err, out)
	}
	if code := initializeStatus(t, podTarget(t, ctl, b, 7102, sandboxToken(master, "goalbox", shared, "executor"))); code != http.StatusOK {
		t.Errorf("control: with one token for every sandbox, %s's token should open %s: HTTP %d", a, b, code)
	}
	t.Logf("control: with one token for every sandbox, %s's token opens %s (rolled out in %v)", a, b, time.Since(start).Round(time.Second))
}
