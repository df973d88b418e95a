package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The seccomp profile the network overlay's executor container names (Localhost goalbox/seccomp-executor.json) is
// deploy/seccomp-executor.json, compose's, in the form every CRI runtime reads. That file is in Docker's format:
// an archMap, and rules with conditions (includes/excludes: capabilities, architectures, kernel versions) that
// Docker resolves for each container. containerd reads a Localhost profile straight into the OCI runtime spec's
// LinuxSeccomp, which has none of those fields: json.Unmarshal drops them without a word, so every rule meant only
// for a container holding CAP_SYS_ADMIN, CAP_BPF, CAP_SYS_MODULE... would apply to every container. (CRI-O reads
// Docker's format; not tried here.) The overlay's file is therefore the resolution made here, for the container
// the overlay runs: no capability at all (drop: [ALL]), on x86-64 or arm64 nodes. Its rules carry no condition, so
// every runtime reads it alike.

// dockerProfile is Docker's profile format, as far as deploy/seccomp-executor.json uses it. It is decoded with
// unknown fields refused, so a field the resolution below does not know (a new kind of condition) fails the test
// instead of being dropped.
type dockerProfile struct {
	DefaultAction   string `json:"defaultAction"`
	DefaultErrnoRet *uint  `json:"defaultErrnoRet,omitempty"`
	ArchMap         []struct {
		Architecture     string   `json:"architecture"`
		SubArchitectures []string `json:"subArchitectures"`
	} `json:"archMap"`
	Syscalls []struct {
		Names    []string     `json:"names"`
		Action   string       `json:"action"`
		ErrnoRet *uint        `json:"errnoRet,omitempty"`
		Args     []seccompArg `json:"args,omitempty"`
		Includes *condition   `json:"includes,omitempty"`
		Excludes *condition   `json:"excludes,omitempty"`
	} `json:"syscalls"`
}

type condition struct {
	Arches    []string `json:"arches,omitempty"`
	Caps      []string `json:"caps,omitempty"`
	MinKernel string   `json:"minKernel,omitempty"`
}

type seccompArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo,omitempty"`
	Op       string `json:"op"`
}

// ociProfile is the OCI runtime spec's LinuxSeccomp, the fields the resolved profile uses.
type ociProfile struct {
	DefaultAction   string       `json:"defaultAction"`
	DefaultErrnoRet *uint        `json:"defaultErrnoRet,omitempty"`
	Architectures   []string     `json:"architectures"`
	Syscalls        []ociSyscall `json:"syscalls"`
}

type ociSyscall struct {
	Names    []string     `json:"names"`
	Action   string       `json:"action"`
	ErrnoRet *uint        `json:"errnoRet,omitempty"`
	Args     []seccompArg `json:"args,omitempty"`
}

// nodeArches are the node architectures the resolved profile serves, in Docker's names (the archMap of
// deploy/seccomp-executor.json names these two and no 32-bit sub-architecture).
var nodeArches = []string{"amd64", "arm64"}

// maxMinKernel is the newest kernel a rule's minKernel condition may ask for and still be kept unconditionally:
// Kubernetes' documentation asks for Linux 6.3 or later on nodes that run Pods with user namespaces of their own
// (idmapped tmpfs mounts, for their Secret, ConfigMap and emptyDir volumes).
const maxMinKernel = "6.3"

// resolveForNodes resolves a Docker-format profile for a container with no capabilities on nodeArches: a rule that
// needs a capability is dropped, one that excludes capabilities kept (none is held), one for other architectures
// only dropped; a rule for one of the two kept for both, since runtimes ignore a rule naming a system call their
// architecture does not have (arch_prctl on arm64).
func resolveForNodes(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in dockerProfile
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("not a profile this resolution knows: %w", err)
	}
	out := ociProfile{DefaultAction: in.DefaultAction, DefaultErrnoRet: in.DefaultErrnoRet}
	for _, a := range in.ArchMap {
		out.Architectures = append(out.Architectures, a.Architecture)
		out.Architectures = append(out.Architectures, a.SubArchitectures...)
	}
	for _, s := range in.Syscalls {
		if c := s.Excludes; c != nil && (len(c.Arches) > 0 || c.MinKernel != "") {
			return nil, fmt.Errorf("%v: an excludes condition on architectures or kernels, which this resolution does not handle", s.Names)
		}
		if c := s.Includes; c != nil {
			if len(c.Caps) > 0 {
				continue
			}
			if len(c.Arches) > 0 && !slices.ContainsFunc(c.Arches, func(a string) bool { return slices.Contains(nodeArches, a) }) {
				continue
			}
			if c.MinKernel != "" && kernelAfter(c.MinKernel, maxMinKernel) {
				return nil, fmt.Errorf("%v: needs kernel %s, newer than the %s this resolution assumes", s.Names, c.MinKernel, maxMinKernel)
			}
		}
		out.Syscalls = append(out.Syscalls, ociSyscall{Names: s.Names, Action: s.Action, ErrnoRet: s.ErrnoRet, Args: s.Args})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// kernelAfter reports whether kernel version a (major.minor) is newer than b.
func kernelAfter(a, b string) bool {
	parse := func(v string) [2]int {
		var r [2]int
		for i, f := range strings.SplitN(v, ".", 2) {
			r[i], _ = strconv.Atoi(f)
		}
		return r
	}
	pa, pb := parse(a), parse(b)
	return pa[0] > pb[0] || pa[0] == pb[0] && pa[1] > pb[1]
}

// nodeProfile is where the network overlay keeps the resolved profile.
var nodeProfile = filepath.Join("deploy", "kubernetes", "overlays", "network", "seccomp-executor.json")

// TestSeccompProfileForNodes: the overlay's profile is deploy/seccomp-executor.json resolved for a container without
// capabilities (GOALBOX_UPDATE_SECCOMP=1 rewrites it, as it does the compose profiles), and it holds nothing a
// runtime reading the OCI format would drop: decoded with unknown fields refused, into the OCI fields only.
func TestSeccompProfileForNodes(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repo, "deploy", "seccomp-executor.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := resolveForNodes(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(repo, nodeProfile)
	if os.Getenv("GOALBOX_UPDATE_SECCOMP") == "1" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not deploy/seccomp-executor.json resolved for the nodes: run GOALBOX_UPDATE_SECCOMP=1 go test -run TestSeccompProfileForNodes . in tests/k8s", nodeProfile)
	}

	// Read as containerd reads it, but with unknown fields refused: everything in it is an OCI field.
	strict := func(data []byte) (ociProfile, error) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var p ociProfile
		return p, dec.Decode(&p)
	}
	p, err := strict(got)
	if err != nil {
		t.Fatalf("%s has a field outside the OCI format: %v", nodeProfile, err)
	}
	// Positive control: compose's file, read the same way, has fields an OCI reader would drop.
	if _, err := strict(src); err == nil || !strings.Contains(err.Error(), "archMap") {
		t.Fatalf("deploy/seccomp-executor.json read as OCI: want the unknown field archMap, got %v", err)
	}

	// What the resolution must keep and drop. Calls allowed to a container only with a capability are not allowed;
	// the namespace and mount calls, openat2 and arch_prctl are; io_uring is refused with ENOSYS.
	allowed := map[string]bool{}
	for _, s := range p.Syscalls {
		if s.Action == "SCMP_ACT_ALLOW" {
			for _, n := range s.Names {
				allowed[n] = true
			}
		}
	}
	for _, n := range []string{"bpf", "perf_event_open", "init_module", "reboot", "chroot", "syslog", "open_by_handle_at", "settimeofday", "fanotify_init", "kcmp", "s390_runtime_instr"} {
		if allowed[n] {
			t.Errorf("%s allows %s, which Docker allows only with a capability or on another architecture", nodeProfile, n)
		}
	}
	for _, n := range []string{"clone", "clone3", "unshare", "setns", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "mount_setattr", "fsopen", "fsconfig", "fsmount", "fspick", "openat2", "arch_prctl", "read", "execve"} {
		if !allowed[n] {
			t.Errorf("%s does not allow %s", nodeProfile, n)
		}
	}
	if !slices.Equal(p.Architectures, []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"}) {
		t.Errorf("%s: architectures %v, want x86-64 and arm64 and no 32-bit ABI", nodeProfile, p.Architectures)
	}
	// And the same names with their capability conditions are in compose's file: the control that the list above
	// names what the resolution removes, not calls that were never there.
	var in dockerProfile
	_ = json.Unmarshal(src, &in)
	conditional := map[string]bool{}
	for _, s := range in.Syscalls {
		if s.Includes != nil && (len(s.Includes.Caps) > 0 || len(s.Includes.Arches) > 0) {
			for _, n := range s.Names {
				conditional[n] = true
			}
		}
	}
	for _, n := range []string{"bpf", "perf_event_open", "init_module", "reboot", "chroot", "syslog", "open_by_handle_at", "settimeofday", "fanotify_init", "kcmp", "s390_runtime_instr"} {
		if !conditional[n] {
			t.Errorf("deploy/seccomp-executor.json has no conditional rule for %s: the check above proves nothing for it", n)
		}
	}
	t.Logf("%s: %d rules (compose's file: %d), architectures %v", nodeProfile, len(p.Syscalls), len(in.Syscalls), p.Architectures)
}

// TestSeccompProfileForNodesInDocker runs the executor image with the overlay's profile in a real runtime (the
// Docker Engine's runc, the runtime under containerd's CRI too), hardened as the overlay's container is: uid 10001,
// read-only root, no capability, no privilege escalation, /proc unmasked (procMount: Unmasked), and -net-allow set,
// which the executor refuses to start with unless it can build a command's sandbox in namespaces (its start-up
// probe builds one, /proc mount included). It must start in its namespace mode. Controls, each one change: compose's
// filesystem profile (deploy/seccomp.json, no namespace calls) instead, and the masked /proc instead: each must
// refuse to start, saying why. What Docker does not give, a user namespace for the container (hostUsers: false),
// the kubelet and runtime of a node do; no node runs here. Skips without a Docker Engine or the goalbox/executor
// image (docker compose -f deploy/compose.yaml build), and fails without them under CI=true.
func TestSeccompProfileForNodesInDocker(t *testing.T) {
	if os.Getenv("GOALBOX_K8S_TEST") == "0" {
		t.Skip("GOALBOX_K8S_TEST=0")
	}
	const image = "goalbox/executor:latest"
	if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("no Docker Engine or no %s image (docker compose -f deploy/compose.yaml build): %v: %s", image, err, bytes.TrimSpace(out))
		if os.Getenv("CI") == "true" { // scripts/test.sh builds the image before the tests
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	run := func(name, profile string, unmasked bool) (id string) {
		t.Helper()
		args := []string{"run", "-d", "--name", fmt.Sprintf("goalbox-k8s-%s-%d", name, os.Getpid()),
			"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges:true",
			"--security-opt", "seccomp=" + filepath.Join(repo, profile), "--user", "10001:10001",
			"--tmpfs", "/tmp:size=64m,mode=1777", "-p", "127.0.0.1::7102",
			"-e", "GOALBOX_EXEC_TOKEN=test", "-e", "GOALBOX_EXEC_BACKEND=local", "-e", "GOALBOX_EXEC_NET_ALLOW=example.com"}
		if unmasked {
			args = append(args, "--security-opt", "systempaths=unconfined")
		}
		out, err := exec.Command("docker", append(args, image)...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker run (%s): %v: %s", name, err, out)
		}
		id = strings.TrimSpace(string(out))
		t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", "-v", id).Run() })
		return id
	}
	logs := func(id string) string {
		out, _ := exec.Command("docker", "logs", id).CombinedOutput()
		return string(out)
	}
	// mode waits for the executor to serve (the confinement mode /healthz reports) or to exit (its last words).
	mode := func(id string) (string, string) {
		t.Helper()
		hc := &http.Client{Timeout: 3 * time.Second}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			state, _ := exec.Command("docker", "inspect", "--format", "{{.State.Status}}", id).Output()
			if strings.TrimSpace(string(state)) == "exited" {
				return "", logs(id)
			}
			if port, err := exec.Command("docker", "port", id, "7102/tcp").Output(); err == nil && len(port) > 0 {
				addr := strings.Fields(string(port))[0]
				if resp, err := hc.Get("http://" + addr + "/healthz"); err == nil {
					var h struct {
						Confinement struct {
							Mode string `json:"mode"`
						} `json:"confinement"`
					}
					err := json.NewDecoder(resp.Body).Decode(&h)
					resp.Body.Close()
					if err == nil && h.Confinement.Mode != "" {
						return h.Confinement.Mode, logs(id)
					}
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
		t.Fatalf("the executor neither served nor exited in 60 s:\n%s", logs(id))
		return "", ""
	}

	start := time.Now()
	if m, log := mode(run("overlay", nodeProfile, true)); m != "pid-namespace" {
		t.Fatalf("the overlay's profile with /proc unmasked: mode %q, want pid-namespace:\n%s", m, log)
	}
	t.Logf("the overlay's profile, /proc unmasked, -net-allow set: namespace mode, in %v", time.Since(start).Round(time.Millisecond))
	controls := []struct {
		name, profile string
		unmasked      bool
		why           string
	}{
		{"plain-profile", filepath.Join("deploy", "seccomp.json"), true, "start the namespace holder"},
		{"masked-proc", nodeProfile, false, "mounting /proc"},
	}
	for _, c := range controls {
		m, log := mode(run(c.name, c.profile, c.unmasked))
		if m != "" || !strings.Contains(log, "-net-allow needs the local backend's namespace mode") || !strings.Contains(log, c.why) {
			t.Errorf("control %s: want a refusal to start naming the namespace mode and %q; mode %q:\n%s", c.name, c.why, m, log)
			continue
		}
		t.Logf("control %s: refused to start (%s)", c.name, c.why)
	}
}
