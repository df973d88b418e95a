package k8s

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// jobController is the user kube-controller-manager's Job controller creates Pods as (with
// --use-service-account-credentials, as kubeadm runs it); the API server's bootstrap RBAC lets it create Pods.
const jobController = "system:serviceaccount:kube-system:job-controller"

// runnerRefusal is what base/runner-label.yaml's policy says when it refuses a Pod.
const runnerRefusal = "only a Job's controller may set it"

// withOwner returns the Pod (JSON) owned by the Job named job, with the given uid, as its controller would make it.
func withOwner(t *testing.T, pod []byte, job, uid string) []byte {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(pod, &obj); err != nil {
		t.Fatal(err)
	}
	obj["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{
		"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": uid, "controller": true, "blockOwnerDeletion": true,
	}}
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// refusedAsRunner runs kubectl (as the test's administrator unless args say --as) and wants the runner-label
// policy's refusal.
func (cp *controlPlane) refusedAsRunner(what string, stdin []byte, args ...string) {
	t := cp.t
	t.Helper()
	out, errs, err := cp.run(stdin, args...)
	if err == nil {
		t.Errorf("attack %s: admitted: %s", what, out)
		return
	}
	if !strings.Contains(errs, runnerRefusal) {
		t.Errorf("attack %s: refused, but not by the runner-label policy: %s", what, errs)
		return
	}
	t.Logf("attack %s: refused: %s", what, strings.TrimSpace(errs))
}

// checkRunnerLabel applies the runner and shows that goalbox.dev/role=runner, the label the sandboxes'
// NetworkPolicy admits, comes only from a Job's controller on a Pod its Job owns: the API server refuses it to
// anyone else, the cluster's administrator included, on a new Pod or an existing one; without the policy's binding
// the same requests go through. It leaves the runner's Pod goalbox-runner-check, created as the Job controller.
func checkRunnerLabel(t *testing.T, cp *controlPlane) {
	cp.applyAll("deploy/kubernetes/runner")
	runnerPod := cp.podFromTemplate("job/goalbox-runner", "goalbox-runner-forged", nil)
	forge := []string{"create", "--dry-run=server", "-f", "-"}

	// The policy is read by the API server a moment after it is stored: wait until a forged runner is refused.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, errs, err := cp.run(runnerPod, forge...)
		if err != nil && strings.Contains(errs, runnerRefusal) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner-label policy refuses no forged runner Pod after 30 s (last: %v %s)", err, errs)
		}
		time.Sleep(300 * time.Millisecond)
	}

	uid := cp.must(nil, "-n", "goalbox", "get", "job", "goalbox-runner", "-o", "jsonpath={.metadata.uid}")
	// Attacks: a Pod labelled runner by someone other than the Job controller, or without a Job owning it; the
	// label added to a sandbox Pod; a runner Pod's image swapped.
	cp.refusedAsRunner("a Pod labelled runner, created by the cluster's administrator", runnerPod, forge...)
	cp.refusedAsRunner("a Pod labelled runner and owned by the Job, created by the administrator",
		withOwner(t, runnerPod, "goalbox-runner", uid), forge...)
	cp.refusedAsRunner("a Pod labelled runner, created as the Job controller but owned by no Job", runnerPod,
		append([]string{"--as", jobController}, forge...)...)
	cp.refusedAsRunner("the runner label added to a sandbox Pod", nil,
		"-n", "goalbox", "label", "pod", "goalbox-sandbox-0", "goalbox.dev/role=runner")

	// Control: the Pod the Job controller makes for its Job is admitted, and an ordinary update of it too.
	cp.must(withOwner(t, cp.podFromTemplate("job/goalbox-runner", "goalbox-runner-check", nil), "goalbox-runner", uid),
		append([]string{"--as", jobController}, "create", "-f", "-")...)
	cp.must(nil, "-n", "goalbox", "annotate", "pod", "goalbox-runner-check", "goalbox.dev/checked=yes")
	cp.refusedAsRunner("a runner Pod's image swapped", nil, "-n", "goalbox", "set", "image", "pod/goalbox-runner-check",
		"agent=registry.example/evil:1")

	// Positive control: with the binding gone, the administrator's forged runner and the relabelled sandbox are
	// admitted; the policy, not something else, refused them.
	cp.must(nil, "delete", "validatingadmissionpolicybinding", "goalbox-runner-label")
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, errs, err := cp.run(runnerPod, forge...)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("control: without the binding, the forged runner Pod is still refused: %v %s", err, errs)
		}
		time.Sleep(300 * time.Millisecond)
	}
	cp.must(nil, "-n", "goalbox", "label", "--dry-run=server", "pod", "goalbox-sandbox-0", "goalbox.dev/role=runner")
	t.Logf("control: without the policy's binding, a forged runner Pod and a relabelled sandbox are admitted")
	cp.applyAll("deploy/kubernetes")
}
