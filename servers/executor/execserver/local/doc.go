// Package local is the executor's local backend: each command runs as a confined process tree on this machine, never
// as root. Its confinement is split by concern, one file or package each, so a reviewer can check it piece by piece:
//
//   - local.go, local_linux.go: the configuration, start-up, mode choice and the Backend methods
//   - policy_linux.go: what every command's sandbox is, decided and validated once (commandPolicy)
//   - holder_linux.go: the namespace holder (user, mount, network, IPC namespaces), which builds the minimal root
//     (package execserver/internal/rootfs)
//   - keeper_linux.go, holderfork_linux.go, holderconn_linux.go, nsrun_linux.go: the setup program built from the
//     policy, the holder forking each sandbox on request, and running a command there
//   - nsfork_linux.go (+ .s): the one part that is not ordinary Go, a raw fork running that program (README.md)
//   - initpool_linux.go: the fallback mode's child inits (package execserver/internal/childinit), started ahead of
//     need, and running a command through one
//   - layer_linux.go, layerrun_linux.go: each command's layer (package execserver/internal/layer), asked of the
//     holder and applied back through wsguard
//   - the pieces with no knowledge of this sequence are packages of execserver/internal (README.md): landlock,
//     confine (rlimits, capabilities, the report), seccomp (typed BPF), cgroup, childinit, layer
//   - runas*.go, localenv.go, instance_linux.go, diskcap.go: the run-as user, the environment and private folders,
//     per-instance names, the disk cap
//
// The holder and the child init are the running binary re-executed: an init() in this package (reexec_linux.go)
// recognises them by os.Args[0], so every binary that links this package (the server, the agent, test binaries) can
// host them.
package local
