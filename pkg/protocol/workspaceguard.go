package protocol

// WorkspaceGuard is how a backend's commands change the workspace, and what bounds them at the act, as data: see
// SECURITY.md's table and docs/executor-local.md (the workspace guard).
type WorkspaceGuard struct {
	// Mode is ProtectedLayer (each command and process works on a copy-on-write layer of the workspace, which
	// the executor applies through pathguard: a protected path is refused whatever the command renamed),
	// ProtectedSweep (commands write the workspace; protected paths by read-only binds where a mount namespace
	// exists and a sweep after each command) or ProtectedNone (nothing is protected).
	Mode ProtectedEnforcement `json:"mode"`
	// ProtectedByConstruction: a command cannot change a protected path at all (Mode "layer"); false means a
	// sweep undoes what it did after it ended.
	ProtectedByConstruction bool `json:"protected_by_construction"`
	// BytesAtTheAct and InodesAtTheAct: the workspace's bytes and inodes are bounded when the command writes
	// (the layer's tmpfs is made with what the caps leave: a write past them fails with ENOSPC), not by a poll.
	BytesAtTheAct  bool `json:"bytes_at_the_act"`
	InodesAtTheAct bool `json:"inodes_at_the_act"`
	// MaxBytes and MaxInodes are the caps (workspace, home, temp and cache together); 0 is none.
	MaxBytes  int64 `json:"max_bytes"`
	MaxInodes int64 `json:"max_inodes"`
	// ApplyEverySeconds is how often a running command's or process's layer is applied (and once more at its end).
	ApplyEverySeconds float64 `json:"apply_every_seconds"`
	// ShmPerCommand: /dev/shm is the command's own, in its layer: it ends with the command and counts in its caps.
	ShmPerCommand bool `json:"shm_per_command"`
	// PrivateDirsPolled: home, temp and cache are bounded by the disk cap's poll (every half second), not at the act.
	PrivateDirsPolled bool `json:"private_dirs_polled"`
}
