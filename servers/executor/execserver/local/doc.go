// Package local is the executor's local backend: each command runs as a confined process tree on this machine, never
// as root. Its confinement is split by concern, one file each, so a reviewer can check it file by file:
//
//   - local.go, local_linux.go: the configuration, start-up, mode choice and the Backend methods
//   - policy_linux.go: what every command's sandbox is, decided and validated once (commandPolicy)
//   - holder_linux.go, mountplan_linux.go: the namespace holder (user, mount, network, IPC namespaces) and its mounts
//   - keeper_linux.go, holderfork_linux.go, holderconn_linux.go, nsrun_linux.go: the setup program built from the
//     policy, the holder forking each sandbox on request, and running a command there
//   - nsfork_linux.go (+ .s): the one part that is not ordinary Go, a raw fork running that program (README.md)
//   - childinit_linux.go, initpool_linux.go: the child init of the fallback mode and its ready pool
//   - confine_linux.go: Landlock, capabilities, no_new_privs, rlimits
//   - seccomp_linux*.go: the seccomp filter (typed BPF)
//   - cgroup_linux.go: the pids and memory cgroups
//   - runas*.go, localenv.go, instance_linux.go, diskcap.go: the run-as user, the environment and private folders,
//     per-instance names, the disk cap
//
// The holder and the child init are the running binary re-executed: an init() in this package recognises them by
// os.Args[0], so every binary that links this package (the server, the agent, test binaries) can host them.
package local
