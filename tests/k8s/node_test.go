package k8s

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeKubeconfig is the administrator's kubeconfig of the one-node cluster scripts/k8s-node.sh starts
// (GOALBOX_K8S_NODE_KUBECONFIG overrides it); the test skips without it (fails with CI=true).
func nodeKubeconfig(t *testing.T) string {
	if os.Getenv("GOALBOX_K8S_TEST") == "0" {
		t.Skip("GOALBOX_K8S_TEST=0")
	}
	kc := os.Getenv("GOALBOX_K8S_NODE_KUBECONFIG")
	if kc == "" {
		kc = "/var/lib/goalbox-k8s-node/admin.kubeconfig"
	}
	if _, err := os.Stat(kc); err != nil {
		msg := fmt.Sprintf("no node cluster (%v): start it with scripts/k8s-node.sh start (root)", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return kc
}

// mcpSession is a client of one goalbox server over streamable HTTP, speaking JSON-RPC by hand: the Host header is
// the Pod's DNS name, which the server admits, whatever address the request goes to.
type mcpSession struct {
	url, host, token, id string
	next                 int
}

func (s *mcpSession) post(t *testing.T, method string, params any, notify bool) (int, map[string]any) {
	t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if !notify {
		s.next++
		msg["id"] = s.next
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest("POST", s.url, bytes.NewReader(body))
	req.Host = s.host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, s.url, err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.id = id
	}
	data, _ := io.ReadAll(resp.Body)
	if notify || resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	// A JSON body, or an event stream whose data line is the answer.
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				data = []byte(d)
			}
		}
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: not JSON-RPC: %v: %s", method, err, data)
	}
	return resp.StatusCode, out
}

func (s *mcpSession) initialize(t *testing.T) {
	t.Helper()
	code, out := s.post(t, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "goalbox-k8s-node-test", "version": "1"}}, false)
	if code != http.StatusOK || out["result"] == nil {
		t.Fatalf("initialize %s: HTTP %d %v", s.url, code, out)
	}
	s.post(t, "notifications/initialized", map[string]any{}, true)
}

// call calls a tool and returns its structured result (or its text) and whether it is an error.
func (s *mcpSession) call(t *testing.T, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	code, out := s.post(t, "tools/call", map[string]any{"name": tool, "arguments": args}, false)
	res, _ := out["result"].(map[string]any)
	if code != http.StatusOK || res == nil {
		t.Fatalf("%s on %s: HTTP %d %v", tool, s.url, code, out)
	}
	isErr, _ := res["isError"].(bool)
	if sc, ok := res["structuredContent"].(map[string]any); ok {
		return sc, isErr
	}
	return res, isErr
}

// nodeCtl runs kubectl against the node's cluster, from the repository's root.
type nodeCtl struct{ kc, bin string }

func (n nodeCtl) run(stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(n.bin, "kubectl"), append([]string{"--kubeconfig", n.kc}, args...)...)
	cmd.Dir = repo
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stdout is kubectl's standard output alone (what it renders, without its warnings).
func (n nodeCtl) stdout(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(n.bin, "kubectl"), append([]string{"--kubeconfig", n.kc}, args...)...)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// withImageTag points rendered manifests at the project's images of tag GOALBOX_K8S_IMAGE_TAG, the tag
// scripts/k8s-node.sh loaded (a build of one's own beside the latest one); unchanged without it.
func withImageTag(t *testing.T, rendered []byte) []byte {
	tag := os.Getenv("GOALBOX_K8S_IMAGE_TAG")
	if tag == "" || tag == "latest" {
		return rendered
	}
	t.Logf("images of tag %s (GOALBOX_K8S_IMAGE_TAG)", tag)
	for _, img := range []string{"goalbox/filesystem", "goalbox/executor"} {
		rendered = bytes.ReplaceAll(rendered, []byte(img+":latest"), []byte(img+":"+tag))
	}
	return rendered
}

func (n nodeCtl) must(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, err := n.run(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestSandboxesOnNode applies the sandboxes to the node scripts/k8s-node.sh runs (overlays/host-users: its
// containerd, Debian's 1.6, cannot run Pods in user namespaces), waits until the Pods are Ready, and works in each
// through both servers from outside the node: a file written through the filesystem server is read by a command the
// executor runs in the same Pod, and each Pod's commands run as its uid on its own workspace.
func TestSandboxesOnNode(t *testing.T) {
	ctl := nodeCtl{kc: nodeKubeconfig(t), bin: controlPlaneBinaries(t)}
	kubectl, must := ctl.run, func(stdin []byte, args ...string) string { t.Helper(); return ctl.must(t, stdin, args...) }
	start := time.Now()
	// A clean namespace each run: the last run's, if any, goes first with its Pods.
	must(nil, "delete", "namespace", "goalbox", "--ignore-not-found", "--wait", "--timeout=3m")
	// Forced: the cluster-scoped policy outlives the namespace, and whoever applied it last owns its fields.
	must(withImageTag(t, ctl.stdout(t, "kustomize", "deploy/kubernetes/overlays/host-users")),
		"apply", "--server-side", "--force-conflicts", "--field-manager", "goalbox-test", "-f", "-")
	master := randomHex(t, 32)
	must(nil, "-n", "goalbox", "create", "secret", "generic", "goalbox-tokens", "--from-literal=master="+master)
	// Two sandboxes: the node has 2 CPUs, each sandbox requests 0.6.
	must(nil, "-n", "goalbox", "scale", "statefulset", "goalbox-sandbox", "--replicas=2")
	if out, err := kubectl(nil, "-n", "goalbox", "rollout", "status", "statefulset/goalbox-sandbox", "--timeout=5m"); err != nil {
		desc, _ := kubectl(nil, "-n", "goalbox", "describe", "pods")
		t.Fatalf("the sandboxes are not Ready: %v\n%s\n%s", err, out, desc)
	}
	t.Logf("2 sandbox Pods Ready in %v", time.Since(start).Round(time.Second))

	var pods []sandboxPod
	for i := 0; i < 2; i++ {
		pod := fmt.Sprintf("goalbox-sandbox-%d", i)
		ip := strings.TrimSpace(must(nil, "-n", "goalbox", "get", "pod", pod, "-o", "jsonpath={.status.podIP}"))
		// The runner's tokens for this Pod: derived from the master, as the Pod's init container derived its own.
		sb := sandboxPod{name: pod, ip: ip, fsToken: sandboxToken(master, "goalbox", pod, "filesystem"), execToken: sandboxToken(master, "goalbox", pod, "executor")}
		pods = append(pods, sb)
		host := pod + ".goalbox-sandbox"
		fs := &mcpSession{url: "http://" + ip + ":7101/mcp", host: host, token: sb.fsToken}
		ex := &mcpSession{url: "http://" + ip + ":7102/mcp", host: host, token: sb.execToken}

		// Control: the wrong token is refused before any MCP.
		bad := &mcpSession{url: ex.url, host: host, token: "wrong"}
		if code, _ := bad.post(t, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "x", "version": "1"}}, false); code != http.StatusUnauthorized {
			t.Errorf("%s: the executor answered a wrong token with HTTP %d, want 401", pod, code)
		}

		fs.initialize(t)
		ex.initialize(t)
		if res, isErr := fs.call(t, "sandbox_write_file", map[string]any{"path": "hello.txt", "content": "written in " + pod + "\n"}); isErr {
			t.Fatalf("%s: write_file: %v", pod, res)
		}
		res, isErr := ex.call(t, "sandbox_run_command", map[string]any{"command": "cat hello.txt; id -u; hostname"})
		if isErr {
			t.Fatalf("%s: run_command: %v", pod, res)
		}
		stdout, _ := res["stdout"].(string)
		if want := "written in " + pod + "\n10001\n" + pod + "\n"; stdout != want {
			t.Errorf("%s: the command printed %q, want %q (%v)", pod, stdout, want, res)
		}
		t.Logf("%s (%s): a file written through the filesystem server, read by a command through the executor: %q", pod, ip, stdout)
	}

	t.Run("runner", func(t *testing.T) { gradeOnPods(t, ctl, pods) })
	t.Run("a token per sandbox", func(t *testing.T) { tokenPerSandbox(t, ctl, master) })

	// The runner label from the real Job controller: the runner's Job (its volumes stay unbound here, no
	// provisioner, so its Pod never starts) gets its Pod created by kube-controller-manager, as the user
	// base/runner-label.yaml admits; the same Pod created by the administrator is refused.
	must(nil, "apply", "--server-side", "--force-conflicts", "--field-manager", "goalbox-test", "-k", "deploy/kubernetes/runner")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out := must(nil, "-n", "goalbox", "get", "pods", "-l", "job-name=goalbox-runner", "-o", "jsonpath={.items[*].metadata.labels.goalbox\\.dev/role}")
		if strings.TrimSpace(out) == "runner" {
			break
		}
		if time.Now().After(deadline) {
			ev, _ := kubectl(nil, "-n", "goalbox", "get", "events", "--field-selector", "involvedObject.kind=Job")
			t.Fatalf("the Job controller made no runner Pod in 2 minutes (labels %q)\n%s", out, ev)
		}
		time.Sleep(time.Second)
	}
	forged := must(nil, "-n", "goalbox", "get", "pods", "-l", "job-name=goalbox-runner", "-o", "jsonpath={.items[0]}")
	var pod map[string]any
	if err := json.Unmarshal([]byte(forged), &pod); err != nil {
		t.Fatal(err)
	}
	meta := pod["metadata"].(map[string]any)
	pod = map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": pod["spec"], "metadata": map[string]any{
		"name": "goalbox-runner-forged", "namespace": "goalbox", "labels": meta["labels"], "ownerReferences": meta["ownerReferences"]}}
	body, _ := json.Marshal(pod)
	if out, err := kubectl(body, "create", "--dry-run=server", "-f", "-"); err == nil || !strings.Contains(out, runnerRefusal) {
		t.Errorf("the Job controller's runner Pod copied by the administrator: want the runner-label refusal, got %v: %s", err, out)
	}
	t.Logf("the Job controller's runner Pod admitted; the administrator's copy refused")
	t.Logf("checked in %v", time.Since(start).Round(time.Second))
}
