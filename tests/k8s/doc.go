// Package k8s holds the tests of goalbox's Kubernetes manifests (deploy/kubernetes) against a real control plane:
// etcd and kube-apiserver, built from the Go module proxy by scripts/k8s-apiserver.sh (the build module is build/),
// started on loopback, and the manifests server-side-applied with kubectl into their namespaces (restricted Pod
// Security for base, baseline for the network overlay). No kubelet runs, so no Pod starts; what is checked is what
// the API server checks: validation, defaulting and admission. The network overlay's seccomp profile is checked as a
// file (resolved from compose's) and, where a Docker Engine and the executor image are, by the executor starting
// under it in a container. It needs only the standard library. See docs/deploy.md.
package k8s
