package k8s

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestNetworkOverlayOnNode runs the network overlay's sandbox on the node: a user-namespaced Pod with an unmasked
// /proc and the executor's Localhost seccomp profile, whose executor runs the namespace mode, so each command's only
// way out is the egress proxy. The ConfigMap's allow-list names one upstream of the test's own (a server on the Pod
// bridge's gateway); a command reaches it, and a second upstream of the test's own on the node's other address is
// refused by the proxy and never sees a request. Its control: the test itself reaches the second upstream.
func TestNetworkOverlayOnNode(t *testing.T) {
	ctl := nodeCtl{kc: nodeKubeconfig(t), bin: controlPlaneBinaries(t)}
	needUsernsRuntime(t, ctl)
	const ns = "goalbox-network"

	// The Localhost profile the overlay names, where this node's kubelet looks for it (its root folder).
	state := os.Getenv("GOALBOX_K8S_NODE_DIR")
	if state == "" {
		state = "/var/lib/goalbox-k8s-node"
	}
	profile, err := os.ReadFile(filepath.Join(repo, "deploy/kubernetes/overlays/network/seccomp-executor.json"))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(state, "kubelet/seccomp/goalbox/seccomp-executor.json")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, profile, 0o644); err != nil {
		t.Fatal(err)
	}

	// Two upstreams of the test's own: the allowed one on the Pod bridge's gateway, the other on the node's address.
	// The bridge appears with the first Pod on the node, so the gateway is read from the node's CNI config now and
	// its upstream listens once the sandbox runs.
	gateway := bridgeGateway(t, state)
	nodeIP := strings.TrimSpace(ctl.must(t, nil, "get", "nodes", "-o", `jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`))
	if nodeIP == "" || nodeIP == gateway {
		t.Fatalf("the node's address %q is no second address beside the gateway %s", nodeIP, gateway)
	}
	otherURL, otherHits := upstream(t, nodeIP, "other upstream")

	ctl.must(t, nil, "delete", "namespace", ns, "--ignore-not-found", "--wait", "--timeout=3m")
	ctl.must(t, withImageTag(t, ctl.stdout(t, "kustomize", "deploy/kubernetes/overlays/network")),
		"apply", "--server-side", "--force-conflicts", "--field-manager", "goalbox-test", "-f", "-")
	t.Cleanup(func() { ctl.run(nil, "delete", "namespace", ns, "--ignore-not-found", "--wait=false") })
	master := randomHex(t, 32)
	ctl.must(t, nil, "-n", ns, "create", "secret", "generic", "goalbox-tokens", "--from-literal=master="+master)
	ctl.must(t, nil, "-n", ns, "patch", "configmap", "goalbox-network", "--type", "merge",
		"-p", fmt.Sprintf(`{"data":{"net-allow":%q}}`, gateway))
	ctl.must(t, nil, "-n", ns, "scale", "statefulset", "goalbox-sandbox", "--replicas=1")
	if out, err := ctl.run(nil, "-n", ns, "rollout", "status", "statefulset/goalbox-sandbox", "--timeout=4m"); err != nil {
		desc, _ := ctl.run(nil, "-n", ns, "describe", "pods")
		t.Fatalf("the network overlay's sandbox is not Ready: %v\n%s\n%s", err, out, desc)
	}
	allowedURL, allowedHits := upstream(t, gateway, "allowed upstream")
	pod := "goalbox-sandbox-0"
	ip := strings.TrimSpace(ctl.must(t, nil, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.status.podIP}"))
	ex := &mcpSession{url: "http://" + ip + ":7102/mcp", host: pod + ".goalbox-sandbox", token: sandboxToken(master, ns, pod, "executor")}
	ex.initialize(t)

	fetch := func(url string) (string, bool) {
		res, isErr := ex.call(t, "sandbox_run_command", map[string]any{"timeout_seconds": 60, "command": fmt.Sprintf(
			`python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())' %s`, url)})
		stdout, _ := res["stdout"].(string)
		code, _ := res["exit_code"].(float64)
		return fmt.Sprint(stdout, res["stderr"]), !isErr && code == 0 && strings.Contains(stdout, "upstream")
	}
	if out, ok := fetch(allowedURL); !ok || allowedHits.Load() == 0 {
		t.Fatalf("a command did not reach the allowed upstream %s through the proxy (%d requests seen): %s", allowedURL, allowedHits.Load(), out)
	}
	if out, ok := fetch(otherURL); ok || otherHits.Load() != 0 {
		t.Errorf("a command reached the upstream net-allow does not name, %s (%d requests seen): %s", otherURL, otherHits.Load(), out)
	} else {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		t.Logf("refused, as it should be: %s", lines[len(lines)-1])
	}
	// Control: the second upstream answers whoever may reach it.
	resp, err := http.Get(otherURL)
	if err != nil || otherHits.Load() != 1 {
		t.Fatalf("control: the test could not reach its own second upstream %s: %v", otherURL, err)
	}
	resp.Body.Close()
}

// bridgeGateway is the gateway address of the node's Pod bridge: the first address of the subnet that
// scripts/k8s-node.sh writes into the node's CNI config (host-local's default gateway).
func bridgeGateway(t *testing.T, state string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(state, "cni/10-goalbox.conflist"))
	if err != nil {
		t.Fatalf("the node's CNI config: %v", err)
	}
	var conf struct {
		Plugins []struct {
			Type string `json:"type"`
			IPAM struct {
				Ranges [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &conf); err != nil {
		t.Fatalf("the node's CNI config: %v", err)
	}
	for _, p := range conf.Plugins {
		if p.Type == "bridge" && len(p.IPAM.Ranges) > 0 && len(p.IPAM.Ranges[0]) > 0 {
			prefix, err := netip.ParsePrefix(p.IPAM.Ranges[0][0].Subnet)
			if err != nil {
				t.Fatalf("the node's Pod subnet: %v", err)
			}
			return prefix.Masked().Addr().Next().String()
		}
	}
	t.Fatalf("the node's CNI config names no bridge subnet: %s", raw)
	return ""
}

// upstream serves "upstream: NAME" on host, port 0, for the test's life; hits counts its requests.
func upstream(t *testing.T, host, name string) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	hits := new(atomic.Int64)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "upstream: "+name+"\n")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String() + "/", hits
}
