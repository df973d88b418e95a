// Package k8s holds the test of goalbox's Kubernetes manifests (deploy/kubernetes) against a real control plane:
// etcd and kube-apiserver, built from the Go module proxy by scripts/k8s-apiserver.sh (the build module is build/),
// started on loopback, and the manifests server-side-applied with kubectl into the namespace that enforces the
// restricted Pod Security Standard. No kubelet runs, so no Pod starts; what is checked is what the API server
// checks: validation, defaulting and admission. It needs only the standard library. See docs/deploy.md.
package k8s
