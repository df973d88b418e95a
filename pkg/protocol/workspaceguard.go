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
	// PollEverySeconds is how often that poll measures a running command's folders; 0 where nothing is polled.
	PollEverySeconds float64 `json:"poll_every_seconds,omitempty"`
	// Sweep is the bounds of the sweep after each command, where one runs (Mode "sweep").
	Sweep *SweepBounds `json:"sweep,omitempty"`
}

// SweepBounds are the limits of the protected files' sweep, each with what happens past it.
type SweepBounds struct {
	// ScanCachedEntries: the scan caches each folder's names up to this many entries; past it, it walks the whole
	// workspace without its cache (slower, never partial).
	ScanCachedEntries int `json:"scan_cached_entries"`
	// KeepFileBytes and KeepTotalBytes bound the copies of protected files kept to put them back; a changed file
	// past them is taken out to the quarantine instead of put back.
	KeepFileBytes  int64 `json:"keep_file_bytes"`
	KeepTotalBytes int64 `json:"keep_total_bytes"`
	// QuarantineMaxBytes bounds what the quarantine keeps; past it, what a sweep takes out is removed uncopied.
	QuarantineMaxBytes int64 `json:"quarantine_max_bytes"`
}
