package k8s

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// repo is the repository root, two folders up from this package.
var repo = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Join(wd, "..", "..")
}()

// binDir is where scripts/k8s-apiserver.sh puts the binaries for the Kubernetes version build/go.mod requires:
// <cache>/k8s/<version>, the cache as scripts/lib.sh chooses it. GOALBOX_K8S_BIN_DIR overrides it.
func binDir(t *testing.T) string {
	if d := os.Getenv("GOALBOX_K8S_BIN_DIR"); d != "" {
		return d
	}
	data, err := os.ReadFile(filepath.Join(repo, "tests", "k8s", "build", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	version := ""
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "k8s.io/kubernetes" && strings.HasPrefix(f[1], "v") {
			version = f[1]
			break
		}
	}
	if version == "" {
		t.Fatal("build/go.mod requires no version of k8s.io/kubernetes")
	}
	cache := os.Getenv("GOALBOX_CACHE_DIR")
	if cache == "" && os.Getuid() == 0 {
		cache = "/var/cache/goalbox"
	} else if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(base, "goalbox")
	}
	return filepath.Join(cache, "k8s", version)
}

// controlPlane is etcd and kube-apiserver on loopback, and a kubectl that talks to the API server as a member of
// system:masters through a static token.
type controlPlane struct {
	t       *testing.T
	exited  chan string // the name of a process that ended before the test did
	bin     string
	dir     string
	server  string
	token   string
	kubectl []string // the kubectl binary and the flags that reach the API server
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs a binary in the background with its output in dir/<name>.log, and stops it when the test ends.
func (cp *controlPlane) start(name string, args ...string) {
	t := cp.t
	logf, err := os.Create(filepath.Join(cp.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(cp.bin, name), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		logf.Close()
		select {
		case cp.exited <- fmt.Sprintf("%s: %v", name, err):
		default:
		}
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

func (cp *controlPlane) logTail(name string) string {
	data, _ := os.ReadFile(filepath.Join(cp.dir, name+".log"))
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

func startControlPlane(t *testing.T, bin string) *controlPlane {
	cp := &controlPlane{t: t, bin: bin, dir: t.TempDir(), exited: make(chan string, 2)}

	// etcd: one member, loopback only, no fsync (its data is thrown away with the test).
	client, peer := freePort(t), freePort(t)
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	cp.start("etcd", "--name", "goalbox-test", "--data-dir", filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "goalbox-test="+peerURL, "--unsafe-no-fsync", "--log-level", "warn")

	// The service account signing key, and the static token file that makes the test's kubectl an administrator.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(cp.dir, "sa.key")
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	cp.token = hex.EncodeToString(tok)
	tokenFile := filepath.Join(cp.dir, "tokens.csv")
	writeFile(t, tokenFile, []byte(cp.token+`,goalbox-test,goalbox-test,"system:masters"`+"\n"))

	// kube-apiserver with its default admission plugins (PodSecurity among them) and self-signed serving
	// certificates it makes in --cert-dir.
	port := freePort(t)
	cp.server = fmt.Sprintf("https://127.0.0.1:%d", port)
	cp.start("kube-apiserver",
		"--etcd-servers", clientURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		// The reconciler of the kubernetes Service's endpoints refuses a loopback address; nothing here needs it.
		"--endpoint-reconciler-type", "none",
		"--cert-dir", filepath.Join(cp.dir, "certs"),
		"--token-auth-file", tokenFile,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", keyFile, "--service-account-signing-key-file", keyFile,
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--enable-admission-plugins", "PodSecurity",
		"--v", "1")

	// A kubeconfig of its own, so nothing of the user's is read or changed.
	kubeconfig := filepath.Join(cp.dir, "kubeconfig")
	writeFile(t, kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: goalbox-test
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: goalbox-test
  user: {token: %q}
contexts:
- name: goalbox-test
  context: {cluster: goalbox-test, user: goalbox-test}
current-context: goalbox-test
`, cp.server, cp.token)))
	cp.kubectl = []string{filepath.Join(bin, "kubectl"), "--kubeconfig", kubeconfig}

	// Ready when /readyz answers 200 (etcd reached, the bootstrap controllers done).
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		req, _ := http.NewRequest("GET", cp.server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+cp.token)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case which := <-cp.exited:
			t.Fatalf("%s before kube-apiserver was ready\n--- etcd:\n%s\n--- kube-apiserver:\n%s",
				which, cp.logTail("etcd"), cp.logTail("kube-apiserver"))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready after 3 minutes (last: %v)\n--- etcd:\n%s\n--- kube-apiserver:\n%s",
				err, cp.logTail("etcd"), cp.logTail("kube-apiserver"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	return cp
}

func writeFile(t *testing.T, name string, data []byte) {
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// run runs kubectl with args (stdin may be nil) and returns its stdout and stderr, and the error of a non-zero exit.
func (cp *controlPlane) run(stdin []byte, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.kubectl[0], append(cp.kubectl[1:], args...)...)
	cmd.Dir = repo
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// must runs kubectl and fails the test on a non-zero exit or a warning from the API server (Pod Security's warn
// mode, deprecated fields), returning stdout.
func (cp *controlPlane) must(stdin []byte, args ...string) string {
	cp.t.Helper()
	out, errs, err := cp.run(stdin, args...)
	if err != nil {
		cp.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errs)
	}
	if strings.Contains(errs, "Warning:") {
		cp.t.Fatalf("kubectl %s: the API server warned:\n%s", strings.Join(args, " "), errs)
	}
	return out
}

// objects counts the objects of a kustomization as kubectl renders it.
func (cp *controlPlane) objects(dir string) []string {
	out := cp.must(nil, "kustomize", dir)
	var kinds []string
	for _, doc := range strings.Split(out, "\n---\n") {
		sc := bufio.NewScanner(strings.NewReader(doc))
		for sc.Scan() {
			if k, ok := strings.CutPrefix(sc.Text(), "kind: "); ok {
				kinds = append(kinds, k)
			}
		}
	}
	return kinds
}

// applyAll server-side-applies a kustomization and checks that the API server took every object it renders, and
// that each one can be read back.
func (cp *controlPlane) applyAll(dir string) {
	t := cp.t
	t.Helper()
	kinds := cp.objects(dir)
	out := cp.must(nil, "apply", "--server-side", "--field-manager", "goalbox-test", "-k", dir)
	applied := regexp.MustCompile(`(?m)^\S+ serverside-applied$`).FindAllString(out, -1)
	if len(applied) != len(kinds) || len(kinds) == 0 {
		t.Fatalf("apply -k %s: %d objects rendered (%v), %d applied:\n%s", dir, len(kinds), kinds, len(applied), out)
	}
	got := strings.Fields(cp.must(nil, "get", "-k", dir, "-o", "name"))
	if len(got) != len(kinds) {
		t.Fatalf("get -k %s: %d objects read back, %d rendered: %v", dir, len(got), len(kinds), got)
	}
	t.Logf("apply -k %s: %s", dir, strings.Join(got, " "))
}

// podFromTemplate reads a workload (statefulset/NAME or job/NAME) back from the API server and makes the Pod its
// controller would create, as JSON, with change applied to the Pod's spec first. Pod Security admission checks a
// controller's Pods only when they are created, which no controller-manager does here: creating them directly is
// what makes admission judge them.
func (cp *controlPlane) podFromTemplate(workload, name string, change func(spec map[string]any)) []byte {
	cp.t.Helper()
	return cp.podFromTemplateIn("goalbox", workload, name, change)
}

// podFromTemplateIn is podFromTemplate for a workload in namespace ns, the Pod in the same namespace.
func (cp *controlPlane) podFromTemplateIn(ns, workload, name string, change func(spec map[string]any)) []byte {
	t := cp.t
	t.Helper()
	var obj struct {
		Spec struct {
			Template struct {
				Metadata map[string]any `json:"metadata"`
				Spec     map[string]any `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(cp.must(nil, "-n", ns, "get", workload, "-o", "json")), &obj); err != nil {
		t.Fatal(err)
	}
	meta := obj.Spec.Template.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	meta["name"] = name
	meta["namespace"] = ns
	spec := obj.Spec.Template.Spec
	if change != nil {
		change(spec)
	}
	pod, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// container returns the container called name in a Pod spec.
func container(t *testing.T, spec map[string]any, name string) map[string]any {
	for _, c := range spec["containers"].([]any) {
		if c := c.(map[string]any); c["name"] == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

// controlPlaneBinaries is the folder of etcd, kube-apiserver and kubectl; the test skips when they are missing
// (fails with CI=true) or when GOALBOX_K8S_TEST=0.
func controlPlaneBinaries(t *testing.T) string {
	if os.Getenv("GOALBOX_K8S_TEST") == "0" {
		t.Skip("GOALBOX_K8S_TEST=0")
	}
	bin := binDir(t)
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			msg := fmt.Sprintf("no %s in %s: build the control plane with scripts/k8s-apiserver.sh (scripts/test.sh does)", b, bin)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return bin
}

func TestManifestsOnAPIServer(t *testing.T) {
	bin := controlPlaneBinaries(t)
	start := time.Now()
	cp := startControlPlane(t, bin)
	t.Logf("etcd and kube-apiserver ready at %s in %v; kubectl version: %s", cp.server,
		time.Since(start).Round(time.Millisecond), strings.Join(strings.Fields(cp.must(nil, "version")), " "))

	// The sandboxes: namespace, Service, StatefulSet, NetworkPolicy.
	cp.applyAll("deploy/kubernetes")
	labels := cp.must(nil, "get", "namespace", "goalbox", "-o", "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}")
	if labels != "restricted" {
		t.Fatalf("namespace goalbox enforces %q, want restricted", labels)
	}
	// What a cluster adds before any Pod can be created: the controller-manager's default ServiceAccount (the
	// ServiceAccount admission plugin wants it) and the tokens Secret the docs tell the user to create.
	if out, errs, err := cp.run(nil, "-n", "goalbox", "create", "serviceaccount", "default"); err != nil && !strings.Contains(errs, "AlreadyExists") {
		t.Fatalf("create serviceaccount default: %v\n%s%s", err, out, errs)
	}
	cp.must(nil, "-n", "goalbox", "create", "secret", "generic", "goalbox-tokens", "--from-literal=master=test-master-of-the-sandboxes-tokens")

	// A sandbox Pod as the StatefulSet's controller would create it: admitted, with no warning.
	cp.must(cp.podFromTemplate("statefulset/goalbox-sandbox", "goalbox-sandbox-0", nil), "create", "-f", "-")
	var back struct {
		Spec struct {
			SecurityContext struct {
				RunAsUser int `json:"runAsUser"`
			} `json:"securityContext"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(cp.must(nil, "-n", "goalbox", "get", "pod", "goalbox-sandbox-0", "-o", "json")), &back); err != nil || back.Spec.SecurityContext.RunAsUser != 10001 {
		t.Fatalf("the sandbox Pod read back: runAsUser %d, %v", back.Spec.SecurityContext.RunAsUser, err)
	}
	// Its own user namespace, kept by the API server (one without UserNamespacesSupport drops the field): the
	// executor's per-user process limit then counts this sandbox alone.
	if hu := cp.must(nil, "-n", "goalbox", "get", "pod", "goalbox-sandbox-0", "-o", "jsonpath={.spec.hostUsers}"); hu != "false" {
		t.Fatalf("the sandbox Pod read back has hostUsers %q, want false", hu)
	}

	// Positive controls: the same Pod made non-compliant is refused by Pod Security admission, for that reason.
	controls := []struct {
		name, want string
		change     func(spec map[string]any)
	}{
		// Not root: in its own user namespace (hostUsers: false) uid 0 is an unprivileged node uid, and Pod
		// Security admits it there by design (and the node's namespaces are invalid there); a node path stays
		// refused.
		{"host-path", "hostPath", func(spec map[string]any) {
			spec["volumes"] = append(spec["volumes"].([]any), map[string]any{"name": "node", "hostPath": map[string]any{"path": "/"}})
		}},
		{"capability", "SYS_ADMIN", func(spec map[string]any) {
			sc := container(t, spec, "executor")["securityContext"].(map[string]any)
			sc["capabilities"] = map[string]any{"drop": []any{"ALL"}, "add": []any{"SYS_ADMIN"}}
		}},
		{"escalation", "allowPrivilegeEscalation", func(spec map[string]any) {
			delete(container(t, spec, "filesystem")["securityContext"].(map[string]any), "allowPrivilegeEscalation")
		}},
	}
	for _, c := range controls {
		pod := cp.podFromTemplate("statefulset/goalbox-sandbox", "bad-"+c.name, c.change)
		out, errs, err := cp.run(pod, "create", "-f", "-")
		if err == nil {
			t.Errorf("control %s: a non-compliant sandbox Pod was admitted: %s", c.name, out)
			continue
		}
		if !strings.Contains(errs, `violates PodSecurity "restricted:latest"`) || !strings.Contains(errs, c.want) {
			t.Errorf("control %s: refused, but not by Pod Security for %s: %s", c.name, c.want, errs)
			continue
		}
		t.Logf("control %s: refused: %s", c.name, strings.TrimSpace(errs))
	}
	// A non-compliant StatefulSet is stored (admission checks Pods, not templates) but warned about.
	_, errs, err := cp.run(nil, "-n", "goalbox", "patch", "statefulset", "goalbox-sandbox", "--dry-run=server", "--type=json",
		"-p", `[{"op":"add","path":"/spec/template/spec/containers/1/securityContext/capabilities/add","value":["NET_RAW"]}]`)
	if err != nil || !strings.Contains(errs, `would violate PodSecurity "restricted:latest"`) {
		t.Errorf("a StatefulSet with NET_RAW added: want a Pod Security warning, got err %v: %s", err, errs)
	}

	// The gVisor overlay: the RuntimeClass and the same sandboxes under it.
	cp.applyAll("deploy/kubernetes/overlays/gvisor")
	cp.must(cp.podFromTemplate("statefulset/goalbox-sandbox", "goalbox-sandbox-gvisor", nil), "create", "-f", "-")
	if rc := cp.must(nil, "-n", "goalbox", "get", "pod", "goalbox-sandbox-gvisor", "-o", "jsonpath={.spec.runtimeClassName}"); rc != "gvisor" {
		t.Fatalf("the gVisor overlay's Pod has runtimeClassName %q", rc)
	}

	// The sandboxes with the node's uids, for nodes that cannot run user-namespaced Pods.
	cp.applyAll("deploy/kubernetes/overlays/host-users")
	cp.must(cp.podFromTemplate("statefulset/goalbox-sandbox", "goalbox-sandbox-hostusers", nil), "create", "-f", "-")
	if hu := cp.must(nil, "-n", "goalbox", "get", "pod", "goalbox-sandbox-hostusers", "-o", "jsonpath={.spec.hostUsers}"); hu != "true" {
		t.Fatalf("the host-users overlay's Pod has hostUsers %q", hu)
	}
	cp.applyAll("deploy/kubernetes")

	// The runner: its volumes and Job, the Job's Pod (created as the Job controller: no one else may label a Pod
	// a runner), and the helper Pod over the volumes.
	checkRunnerLabel(t, cp)
	cp.must(nil, "apply", "--server-side", "--field-manager", "goalbox-test", "-f", "deploy/kubernetes/runner/volumes-pod.yaml")

	// The runner's Pod carries the label the sandboxes' NetworkPolicy admits.
	sel := cp.must(nil, "-n", "goalbox", "get", "networkpolicy", "goalbox-sandbox", "-o", "jsonpath={.spec.ingress[0].from[0].podSelector.matchLabels}")
	role := cp.must(nil, "-n", "goalbox", "get", "pod", "goalbox-runner-check", "-o", "jsonpath={.metadata.labels.goalbox\\.dev/role}")
	if !strings.Contains(sel, `"goalbox.dev/role":"`+role+`"`) || role == "" {
		t.Fatalf("the NetworkPolicy admits %s; the runner Pod has role %q", sel, role)
	}
	t.Logf("all accepted in %v", time.Since(start).Round(time.Millisecond))
}
