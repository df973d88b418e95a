// Package cgroup limits all of a command's processes together with cgroup controllers, where the server may create
// cgroups (root on a host; usually not in a container): a process limit (pids) and a memory limit (memory), each
// command in a fresh cgroup of its own under one parent per backend, which may carry a total for all of them.
// RLIMIT_NPROC cannot do the first: the kernel does not apply it to root, and it counts every process of the user,
// the server's own included. RLIMIT_DATA, which the local backend sets too, binds each process alone.
//
// It works on cgroup v1 (a hierarchy per controller) and v2 (the unified hierarchy), under the server's own cgroup
// as /proc/self/cgroup names it. The docker backend does not use it: there the Engine makes each container's cgroup
// and the backend only makes their common parent (docker/cgroup_linux.go).
package cgroup
