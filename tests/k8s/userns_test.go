package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPidsPerSandboxOnNode is the process bound per sandbox by construction: a command in one sandbox Pod holding
// as many processes as the executor lets it (RLIMIT_NPROC, 1,024) leaves the other Pod able to run `true`, because
// base's Pods run in user namespaces of their own (hostUsers: false), each with node uids no other Pod has, so the
// kernel counts each sandbox's processes apart. The control is overlays/host-users, every sandbox uid 10001 on the
// node: the same command leaves the other Pod unable to start one.
//
// It needs a node whose runtime runs Pods in user namespaces (containerd 2 and runc 1.2 or later:
// GOALBOX_K8S_RUNTIME_DIR for scripts/k8s-node.sh start, docs/kubernetes-node.md), which the test command's node
// runs. On a node whose runtime cannot (Debian's containerd 1.6) it skips, and fails under CI=true.
// bombCommand forks until the kernel refuses (a shell would end at its first refused fork, and the executor would
// then end the command's processes), holds what it made (forking a thousand takes a minute at this machine's
// load), and says how many.
const bombCommand = `python3 -c '
import os, time
n = 0
for _ in range(1500):
    try:
        if os.fork() == 0:
            time.sleep(150)
            os._exit(0)
        n += 1
    except OSError as e:
        print("refused after", n, e, flush=True)
        break
time.sleep(150)
'`

func TestPidsPerSandboxOnNode(t *testing.T) {
	ctl := nodeCtl{kc: nodeKubeconfig(t), bin: controlPlaneBinaries(t)}
	needUsernsRuntime(t, ctl)
	for _, c := range []struct {
		kustomization string
		userns        bool
	}{{"deploy/kubernetes", true}, {"deploy/kubernetes/overlays/host-users", false}} {
		t.Run(c.kustomization, func(t *testing.T) {
			ctl.must(t, nil, "delete", "namespace", "goalbox", "--ignore-not-found", "--wait", "--timeout=3m")
			rendered := withImageTag(t, ctl.stdout(t, "kustomize", c.kustomization))
			if !c.userns {
				// The control's sandboxes share a node uid of the test's own: at 10001, the uid of the project's
				// images, its bomb would also starve the Docker tests running beside it on this machine.
				rendered = bytes.ReplaceAll(rendered, []byte("runAsUser: 10001"), []byte("runAsUser: 10777"))
			}
			ctl.must(t, rendered,
				"apply", "--server-side", "--force-conflicts", "--field-manager", "goalbox-test", "-f", "-")
			master := randomHex(t, 32)
			ctl.must(t, nil, "-n", "goalbox", "create", "secret", "generic", "goalbox-tokens", "--from-literal=master="+master)
			ctl.must(t, nil, "-n", "goalbox", "scale", "statefulset", "goalbox-sandbox", "--replicas=2")
			if out, err := ctl.run(nil, "-n", "goalbox", "rollout", "status", "statefulset/goalbox-sandbox", "--timeout=4m"); err != nil {
				desc, _ := ctl.run(nil, "-n", "goalbox", "describe", "pods")
				t.Fatalf("the sandboxes are not Ready (hostUsers: %v): %v\n%s\n%s", !c.userns, err, out, desc)
			}
			a, b := "goalbox-sandbox-0", "goalbox-sandbox-1"
			uidMap := ctl.must(t, nil, "-n", "goalbox", "exec", a, "-c", "executor", "--", "cat", "/proc/self/uid_map")
			if f := strings.Fields(uidMap); len(f) != 3 || (f[1] != "0") != c.userns {
				t.Fatalf("%s's uid map %q: want a user namespace of its own: %v", a, uidMap, c.userns)
			}

			// The attack: as many processes as the command can make, held for a minute.
			bomb := podTarget(t, ctl, a, 7102, sandboxToken(master, "goalbox", a, "executor"))
			bomb.initialize(t)
			done := make(chan struct{})
			var bombAnswer []byte // written before done closes
			go func() {
				defer close(done)
				// Not post: its end (the namespace deleted under it) is no failure, and this is not the test's goroutine.
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": map[string]any{
					"name": "sandbox_run_command", "arguments": map[string]any{
						"command": bombCommand, "timeout_seconds": 240}}})
				req, _ := http.NewRequest("POST", bomb.url, bytes.NewReader(body))
				req.Host = bomb.host
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer "+bomb.token)
				req.Header.Set("Mcp-Session-Id", bomb.id)
				if resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req); err == nil {
					bombAnswer, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
			}()
			// Held means at least 900 and no longer growing: the kernel has refused a fork (or the bomb made all it
			// would). Running the other Pod's command while the count still grows would race the bomb for the uid's
			// last free slots, and the control could then run `true` in a slot the bomb had not reached yet.
			held, last, steady := 0, 0, 0
			for start := time.Now(); time.Since(start) < 3*time.Minute; time.Sleep(2 * time.Second) {
				// The bomb's processes on this node, found by their command line (a command's processes are not in
				// the container's view, and the executor may place them in cgroups of its own).
				n := bombProcesses()
				if n >= 900 && n == last {
					steady++
				} else {
					steady = 0
				}
				last = n
				if steady >= 2 {
					held = n
					break
				}
			}
			if held == 0 {
				select {
				case <-done:
					t.Fatalf("%s's command never held a steady 900 processes (last count %d); it ended: %s", a, last, bombAnswer)
				default:
					t.Fatalf("%s's command never held a steady 900 processes (last count %d)", a, last)
				}
			}

			victim := podTarget(t, ctl, b, 7102, sandboxToken(master, "goalbox", b, "executor"))
			victim.initialize(t)
			res, isErr := victim.call(t, "sandbox_run_command", map[string]any{"command": "true && echo ran", "timeout_seconds": 30})
			stdout, _ := res["stdout"].(string)
			ran := !isErr && stdout == "ran\n"
			t.Logf("%s holds %d processes; %s's `true`: ran %v (%v)", a, held, b, ran, strings.TrimSpace(fmt.Sprint(res)))
			if ran != c.userns {
				if c.userns {
					t.Errorf("with a user namespace per Pod, %s's command holding %d processes left %s unable to run true: %v", a, held, b, res)
				} else {
					t.Errorf("control: with the node's uids, %s's command holding %d processes should leave %s unable to run true: %v", a, held, b, res)
				}
			}
			ctl.must(t, nil, "delete", "namespace", "goalbox", "--wait", "--timeout=3m")
			<-done
		})
	}
}

// bombProcesses counts the node's processes running bombCommand (its text is in each one's command line).
func bombProcesses() int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte("refused after")) {
			n++
		}
	}
	return n
}

// needUsernsRuntime skips (fails under CI=true) on a node whose runtime cannot run Pods in user namespaces.
func needUsernsRuntime(t *testing.T, ctl nodeCtl) {
	t.Helper()
	runtime := strings.TrimSpace(ctl.must(t, nil, "get", "nodes", "-o", "jsonpath={.items[0].status.nodeInfo.containerRuntimeVersion}"))
	if strings.HasPrefix(runtime, "containerd://1.") {
		msg := fmt.Sprintf("the node's runtime %s cannot run Pods in user namespaces: start the node with "+
			"GOALBOX_K8S_RUNTIME_DIR=$(scripts/k8s-node.sh build-runtime) (containerd 2, runc 1.2 or later)", runtime)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}
