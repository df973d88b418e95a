// Package docker is the executor's Docker backend: each command runs in a container of its own, of a configured
// image, as the workspace's owner, with no network, no capabilities and cgroup limits (docker.go: configuration and
// start-up; container.go: one container's life; run.go: Run; pool.go: the optional warm pool).
package docker
