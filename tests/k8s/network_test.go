package k8s

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// withNamespace is a Pod (JSON) moved into namespace ns.
func withNamespace(t *testing.T, pod []byte, ns string) []byte {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(pod, &obj); err != nil {
		t.Fatal(err)
	}
	obj["metadata"].(map[string]any)["namespace"] = ns
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// refused creates a Pod that must not be admitted and returns the API server's answer.
func (cp *controlPlane) refused(what string, pod []byte) string {
	t := cp.t
	t.Helper()
	out, errs, err := cp.run(pod, "create", "-f", "-")
	if err == nil {
		t.Fatalf("%s: admitted: %s", what, out)
	}
	return strings.TrimSpace(errs)
}

// execSC is the executor container's securityContext in a Pod spec.
func execSC(t *testing.T, spec map[string]any) map[string]any {
	return container(t, spec, "executor")["securityContext"].(map[string]any)
}

// TestNetworkOverlayOnAPIServer applies deploy/kubernetes/overlays/network beside base and checks what the API server
// decides about its sandbox Pods: admitted in the overlay's namespace (baseline) with the user namespace, the
// unmasked /proc, the Localhost seccomp profile and the network settings wired; refused under base's restricted
// level for the unmasked /proc alone; refused without the user namespace; and the NetworkPolicy's egress rules.
func TestNetworkOverlayOnAPIServer(t *testing.T) {
	bin := controlPlaneBinaries(t)
	start := time.Now()
	cp := startControlPlane(t, bin)
	t.Logf("etcd and kube-apiserver ready in %v", time.Since(start).Round(time.Millisecond))

	// Base (namespace goalbox, restricted) for the controls, and the overlay (goalbox-network) beside it.
	cp.applyAll("deploy/kubernetes")
	cp.applyAll("deploy/kubernetes/overlays/network")
	const ns = "goalbox-network"
	for label, want := range map[string]string{"enforce": "baseline", "enforce-version": "latest", "warn": "baseline", "audit": "restricted"} {
		got := cp.must(nil, "get", "namespace", ns, "-o", "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/"+label+"}")
		if got != want {
			t.Errorf("namespace %s: pod-security.kubernetes.io/%s is %q, want %q", ns, label, got, want)
		}
	}
	if got := cp.must(nil, "get", "namespace", "goalbox", "-o", "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}"); got != "restricted" {
		t.Fatalf("base's namespace enforces %q after the overlay was applied, want restricted", got)
	}
	for _, n := range []string{"goalbox", ns} {
		if out, errs, err := cp.run(nil, "-n", n, "create", "serviceaccount", "default"); err != nil && !strings.Contains(errs, "AlreadyExists") {
			t.Fatalf("create serviceaccount default -n %s: %v\n%s%s", n, err, out, errs)
		}
	}
	cp.must(nil, "-n", ns, "create", "secret", "generic", "goalbox-tokens", "--from-literal=master=test-master-of-the-sandboxes-tokens")
	// The ConfigMap as applied: no network, no credentials, until the user sets them.
	if got := cp.must(nil, "-n", ns, "get", "configmap", "goalbox-network", "-o", "jsonpath={.data}"); got != `{"net-allow":"","secrets":""}` {
		t.Errorf("configmap goalbox-network holds %s, want both keys empty", got)
	}

	// A sandbox Pod as the StatefulSet's controller would create it, with no goalbox-credentials Secret: admitted
	// under baseline without a warning, and read back with what the overlay set.
	cp.must(cp.podFromTemplateIn(ns, "statefulset/goalbox-sandbox", "goalbox-sandbox-0", nil), "create", "-f", "-")
	var back struct {
		Spec map[string]any `json:"spec"`
	}
	if err := json.Unmarshal([]byte(cp.must(nil, "-n", ns, "get", "pod", "goalbox-sandbox-0", "-o", "json")), &back); err != nil {
		t.Fatal(err)
	}
	spec := back.Spec
	if hu, ok := spec["hostUsers"].(bool); !ok || hu {
		t.Errorf("hostUsers read back: %v, want false", spec["hostUsers"])
	}
	if spec["automountServiceAccountToken"] != false {
		t.Errorf("automountServiceAccountToken read back: %v", spec["automountServiceAccountToken"])
	}
	psc := spec["securityContext"].(map[string]any)
	if psc["runAsUser"] != 10001.0 || psc["runAsNonRoot"] != true || psc["fsGroup"] != 10001.0 {
		t.Errorf("the Pod's securityContext read back: %v", psc)
	}
	for _, name := range []string{"filesystem", "executor"} {
		sc := container(t, spec, name)["securityContext"].(map[string]any)
		caps, _ := sc["capabilities"].(map[string]any)
		if sc["runAsUser"] != 10001.0 || sc["runAsNonRoot"] != true || sc["readOnlyRootFilesystem"] != true ||
			sc["allowPrivilegeEscalation"] != false || caps == nil || !slices.Equal(caps["drop"].([]any), []any{"ALL"}) || caps["add"] != nil {
			t.Errorf("container %s: base's hardening not kept: %v", name, sc)
		}
	}
	sc := execSC(t, spec)
	if sc["procMount"] != "Unmasked" {
		t.Errorf("executor procMount read back: %v, want Unmasked", sc["procMount"])
	}
	if sp, _ := sc["seccompProfile"].(map[string]any); sp["type"] != "Localhost" || sp["localhostProfile"] != "goalbox/seccomp-executor.json" {
		t.Errorf("executor seccompProfile read back: %v", sc["seccompProfile"])
	}
	fsc := container(t, spec, "filesystem")["securityContext"].(map[string]any)
	if sp, _ := fsc["seccompProfile"].(map[string]any); sp["type"] != "RuntimeDefault" || fsc["procMount"] == "Unmasked" {
		t.Errorf("the filesystem server's securityContext changed: %v", fsc)
	}
	env := map[string]map[string]any{}
	for _, e := range container(t, spec, "executor")["env"].([]any) {
		e := e.(map[string]any)
		env[e["name"].(string)] = e
	}
	if _, ok := env["GOALBOX_EXEC_NO_NAMESPACES"]; ok {
		t.Errorf("the executor still has GOALBOX_EXEC_NO_NAMESPACES: %v", env["GOALBOX_EXEC_NO_NAMESPACES"])
	}
	for name, key := range map[string]string{"GOALBOX_EXEC_NET_ALLOW": "net-allow", "GOALBOX_EXEC_SECRET": "secrets"} {
		ref, _ := env[name]["valueFrom"].(map[string]any)
		cm, _ := ref["configMapKeyRef"].(map[string]any)
		if cm["name"] != "goalbox-network" || cm["key"] != key {
			t.Errorf("%s read back: %v, want the goalbox-network ConfigMap's %s", name, env[name], key)
		}
	}
	var mounted bool
	for _, m := range container(t, spec, "executor")["volumeMounts"].([]any) {
		if m := m.(map[string]any); m["name"] == "credentials" {
			mounted = m["mountPath"] == "/run/secrets/goalbox" && m["readOnly"] == true
		}
	}
	for _, m := range container(t, spec, "filesystem")["volumeMounts"].([]any) {
		if m.(map[string]any)["name"] == "credentials" {
			t.Error("the filesystem server mounts the credentials")
		}
	}
	var secretVol map[string]any
	for _, v := range spec["volumes"].([]any) {
		if v := v.(map[string]any); v["name"] == "credentials" {
			secretVol, _ = v["secret"].(map[string]any)
		}
	}
	if !mounted || secretVol["secretName"] != "goalbox-credentials" || secretVol["optional"] != true || secretVol["defaultMode"] != 256.0 {
		t.Errorf("credentials: mounted read-only at /run/secrets/goalbox %v; volume %v, want the optional Secret goalbox-credentials, mode 0400", mounted, secretVol)
	}
	t.Logf("admitted in %s: hostUsers false, procMount Unmasked, Localhost goalbox/seccomp-executor.json, the network env from the ConfigMap", ns)

	overlayPod := func(name string, change func(spec map[string]any)) []byte {
		return cp.podFromTemplateIn(ns, "statefulset/goalbox-sandbox", name, change)
	}

	// Under base's restricted level the same Pod is refused, for the unmasked /proc and nothing else (restricted
	// forbids it whatever hostUsers says); with /proc masked it is admitted there, so the overlay keeps every other
	// requirement of restricted, the Localhost profile and the user namespace included.
	errs := cp.refused("the overlay's Pod under restricted", withNamespace(t, overlayPod("net-restricted", nil), "goalbox"))
	_, reasons, _ := strings.Cut(errs, `violates PodSecurity "restricted:latest": `)
	if !strings.HasPrefix(reasons, "procMount") || strings.Contains(reasons, "), ") {
		t.Errorf("the overlay's Pod under restricted: want a refusal for procMount alone, got: %s", errs)
	}
	t.Logf("control restricted: refused: %s", errs)
	cp.must(withNamespace(t, overlayPod("net-restricted-masked", func(spec map[string]any) {
		delete(execSC(t, spec), "procMount")
	}), "goalbox"), "create", "-f", "-")
	t.Logf("control restricted: the same Pod without procMount: admitted under restricted")

	// Without a user namespace of its own the unmasked /proc is refused: hostUsers true or unset (true by default).
	// The API server's validation refuses it before Pod Security is asked.
	for name, change := range map[string]func(spec map[string]any){
		"hostusers-true":  func(spec map[string]any) { spec["hostUsers"] = true },
		"hostusers-unset": func(spec map[string]any) { delete(spec, "hostUsers") },
	} {
		errs := cp.refused(name, overlayPod("net-"+name, change))
		if !strings.Contains(errs, "`hostUsers` must be false to use `Unmasked`") {
			t.Errorf("control %s: refused, but not for the unmasked /proc without a user namespace: %s", name, errs)
			continue
		}
		t.Logf("control %s: refused: %s", name, errs)
	}
	// ... and the masked /proc with hostUsers unset is admitted: the user namespace is what the unmasked one costs.
	cp.must(overlayPod("net-hostusers-masked", func(spec map[string]any) {
		delete(spec, "hostUsers")
		delete(execSC(t, spec), "procMount")
	}), "create", "-f", "-")

	// Baseline's relaxation for user-namespaced Pods is its 1.35 policy: pinned to 1.34, the same namespace refuses
	// the Pod for procMount.
	cp.must([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"goalbox-baseline-134","labels":{
		"pod-security.kubernetes.io/enforce":"baseline","pod-security.kubernetes.io/enforce-version":"v1.34"}}}`), "create", "-f", "-")
	cp.must(nil, "-n", "goalbox-baseline-134", "create", "serviceaccount", "default")
	errs = cp.refused("baseline v1.34", withNamespace(t, overlayPod("net-baseline-134", nil), "goalbox-baseline-134"))
	if !strings.Contains(errs, `violates PodSecurity "baseline:v1.34"`) || !strings.Contains(errs, "procMount") {
		t.Errorf("control baseline v1.34: refused, but not by Pod Security for procMount: %s", errs)
	} else {
		t.Logf("control baseline v1.34: refused: %s", errs)
	}

	// Baseline still holds in the overlay's namespace: an added capability, a folder of the node or an unconfined
	// seccomp profile is refused for that reason. (A privileged container is refused before admission, by the API
	// server's --allow-privileged=false, its default.)
	for _, c := range []struct {
		name, want string
		change     func(spec map[string]any)
	}{
		{"capability", "SYS_ADMIN", func(spec map[string]any) {
			execSC(t, spec)["capabilities"] = map[string]any{"drop": []any{"ALL"}, "add": []any{"SYS_ADMIN"}}
		}},
		{"hostpath", "hostPath", func(spec map[string]any) {
			spec["volumes"] = append(spec["volumes"].([]any), map[string]any{"name": "node", "hostPath": map[string]any{"path": "/var/lib/kubelet"}})
			c := container(t, spec, "executor")
			c["volumeMounts"] = append(c["volumeMounts"].([]any), map[string]any{"name": "node", "mountPath": "/node", "readOnly": true})
		}},
		{"unconfined", "seccompProfile", func(spec map[string]any) {
			execSC(t, spec)["seccompProfile"] = map[string]any{"type": "Unconfined"}
		}},
	} {
		errs := cp.refused(c.name, overlayPod("net-bad-"+c.name, c.change))
		if !strings.Contains(errs, `violates PodSecurity "baseline:latest"`) || !strings.Contains(errs, c.want) {
			t.Errorf("control %s: refused, but not by Pod Security's baseline for %s: %s", c.name, c.want, errs)
			continue
		}
		t.Logf("control %s: refused: %s", c.name, errs)
	}
	// warn: baseline: a StatefulSet whose Pods baseline would refuse is stored, with a warning.
	_, errs, err := cp.run(nil, "-n", ns, "patch", "statefulset", "goalbox-sandbox", "--dry-run=server", "--type=json",
		"-p", `[{"op":"add","path":"/spec/template/spec/containers/0/securityContext/capabilities/add","value":["SYS_ADMIN"]}]`)
	if err != nil || !strings.Contains(errs, `would violate PodSecurity "baseline:latest"`) {
		t.Errorf("a StatefulSet with SYS_ADMIN added: want a baseline warning, got err %v: %s", err, errs)
	}

	// The NetworkPolicy: base's ingress, and egress on TCP 80 and 443 to public addresses plus DNS to kube-dns.
	var np struct {
		Spec struct {
			PolicyTypes []string `json:"policyTypes"`
			Ingress     []any    `json:"ingress"`
			Egress      []struct {
				To []struct {
					IPBlock *struct {
						CIDR   string   `json:"cidr"`
						Except []string `json:"except"`
					} `json:"ipBlock"`
					NamespaceSelector *struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"namespaceSelector"`
					PodSelector *struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"podSelector"`
				} `json:"to"`
				Ports []struct {
					Protocol string `json:"protocol"`
					Port     int    `json:"port"`
				} `json:"ports"`
			} `json:"egress"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(cp.must(nil, "-n", ns, "get", "networkpolicy", "goalbox-sandbox", "-o", "json")), &np); err != nil {
		t.Fatal(err)
	}
	ports := func(i int) []string {
		var p []string
		for _, x := range np.Spec.Egress[i].Ports {
			p = append(p, x.Protocol+"/"+strconv.Itoa(x.Port))
		}
		return p
	}
	if !slices.Equal(np.Spec.PolicyTypes, []string{"Ingress", "Egress"}) || len(np.Spec.Ingress) != 1 || len(np.Spec.Egress) != 2 {
		t.Fatalf("networkpolicy goalbox-sandbox read back: %+v", np.Spec)
	}
	web := np.Spec.Egress[0]
	if !slices.Equal(ports(0), []string{"TCP/80", "TCP/443"}) || len(web.To) != 2 || web.To[0].IPBlock == nil || web.To[1].IPBlock == nil ||
		web.To[0].IPBlock.CIDR != "0.0.0.0/0" || web.To[1].IPBlock.CIDR != "::/0" ||
		!slices.Equal(web.To[0].IPBlock.Except, []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16",
			"0.0.0.0/8", "127.0.0.0/8", "192.0.0.0/24", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4"}) ||
		!slices.Equal(web.To[1].IPBlock.Except, []string{"fc00::/7", "fe80::/10", "64:ff9b::/96", "64:ff9b:1::/48", "::/128", "::1/128", "ff00::/8"}) {
		t.Errorf("the web egress rule read back: ports %v, to %+v %+v", ports(0), web.To[0].IPBlock, web.To[1].IPBlock)
	}
	dns := np.Spec.Egress[1]
	if !slices.Equal(ports(1), []string{"UDP/53", "TCP/53"}) || len(dns.To) != 1 || dns.To[0].NamespaceSelector == nil || dns.To[0].PodSelector == nil ||
		dns.To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "kube-system" || dns.To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" {
		t.Errorf("the DNS egress rule read back: ports %v, to %+v", ports(1), dns.To)
	}
	// Control: the API server validates these blocks (an except outside its cidr is refused), so what was read back
	// is a policy it took as meant, not text it stored unread.
	_, errs, err = cp.run(nil, "-n", ns, "patch", "networkpolicy", "goalbox-sandbox", "--dry-run=server", "--type=json",
		"-p", `[{"op":"add","path":"/spec/egress/0/to/1/ipBlock/except/-","value":"10.0.0.0/8"}]`)
	if err == nil || !strings.Contains(errs, "except") {
		t.Errorf("an IPv4 except in the IPv6 block: want a refusal, got err %v: %s", err, errs)
	} else {
		t.Logf("control networkpolicy: refused: %s", strings.TrimSpace(errs))
	}

	// The runner in the overlay's namespace: its Job's Pod, as the Job controller creates it, is admitted there
	// and carries the role the policy admits; the same Pod from anyone else is refused there too.
	cp.applyAll("deploy/kubernetes/overlays/network/runner")
	uid := cp.must(nil, "-n", ns, "get", "job", "goalbox-runner", "-o", "jsonpath={.metadata.uid}")
	runnerPod := withOwner(t, cp.podFromTemplateIn(ns, "job/goalbox-runner", "goalbox-runner-check", nil), "goalbox-runner", uid)
	cp.refusedAsRunner("a runner Pod in "+ns+" created by the administrator", runnerPod, "create", "--dry-run=server", "-f", "-")
	cp.must(runnerPod, "--as", jobController, "create", "-f", "-")
	role := cp.must(nil, "-n", ns, "get", "pod", "goalbox-runner-check", "-o", "jsonpath={.metadata.labels.goalbox\\.dev/role}")
	sel := cp.must(nil, "-n", ns, "get", "networkpolicy", "goalbox-sandbox", "-o", "jsonpath={.spec.ingress[0].from[0].podSelector.matchLabels}")
	if role == "" || !strings.Contains(sel, `"goalbox.dev/role":"`+role+`"`) {
		t.Errorf("the NetworkPolicy admits %s; the runner Pod in %s has role %q", sel, ns, role)
	}
	// The helper Pod over the volumes, moved as the runner kustomization's comment shows (the sed there).
	helper, err := os.ReadFile(filepath.Join(repo, "deploy", "kubernetes", "runner", "volumes-pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	moved := regexp.MustCompile(`(?m)^  namespace: goalbox$`).ReplaceAll(helper, []byte("  namespace: "+ns))
	if bytes.Equal(moved, helper) {
		t.Fatal("volumes-pod.yaml has no line \"  namespace: goalbox\" for the sed to change")
	}
	cp.must(moved, "apply", "--server-side", "--field-manager", "goalbox-test", "-f", "-")
	cp.must(nil, "-n", ns, "get", "pod", "goalbox-volumes")
	t.Logf("all checked in %v", time.Since(start).Round(time.Millisecond))
}
