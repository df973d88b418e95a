package local

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/confine"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/landlock"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/layer"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/rootfs"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/seccomp"
)

// commandPolicy is what each command's sandbox is, decided once when the backend starts (New) from its
// configuration and what this machine permits, validated there, and only read afterwards: the namespace mode's
// setup program is built from it (keeper_linux.go, in the holder, which gets it as JSON), the fallback's child init
// applies it (package childinit), and /healthz reports it (sandboxpolicy_linux.go, local_linux.go). Every choice
// between the modes reads Isolation; none asks whether a helper process exists.
type commandPolicy struct {
	// Isolation is the mode: IsolationPIDNamespace (the holder's namespaces, a keeper and a PID namespace per
	// command) or IsolationSubreaperInit (the fallback: a child init per command, no namespaces).
	Isolation protocol.ProcessIsolation `json:"isolation"`
	// Dir is the workspace, each command's first working folder; Env its environment (the allowlist).
	Dir string   `json:"dir"`
	Env []string `json:"env"`
	// Rules are the paths Landlock grants, as this mode names them (the namespace mode's /etc is one masked
	// folder; the fallback lists its readable entries).
	Rules landlock.Rules `json:"rules"`
	// Landlock is whether Rules are enforced (LandlockEnforced), or why not.
	Landlock protocol.LandlockState `json:"landlock"`
	// Seccomp selects the filter; the fallback's adds the rules a namespace would give.
	Seccomp seccomp.Policy `json:"seccomp"`
	// Rlimits are set on each command's first process (lowered only, never raised).
	Rlimits []confine.Rlimit `json:"rlimits"`
	// Layer is whether each command works on a layer of its own (the namespace mode, where the kernel mounts an
	// overlay in a user namespace and -no-workspace-layer is not given): its changes reach the workspace only
	// through the guard (layerrun_linux.go). Without it the protected paths are read-only binds and a sweep.
	Layer bool `json:"layer"`
	// PrivateLayers are the private folders (home, temp, the build cache) each command with a layer sees as an
	// overlay of its own, in the same bounded tmpfs as the workspace's upper layer (package layer); applied back
	// by the executor with no protected paths. A cache shared between workspaces on purpose is not among them.
	PrivateLayers []layer.Private `json:"private_layers"`
	// LayerKeeps are the holder's mounts below one of the layer's mount points that are not one themselves (a
	// file of the cache folder bound under /tmp): the keeper parks them before it attaches the layer and puts them
	// back after (layerKeeps).
	LayerKeeps []string `json:"layer_keeps,omitempty"`
	// UID and GID are who commands run as on the host: never root.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// DropGroups clears the supplementary groups the holder, and so every command, would inherit (a root server's).
	DropGroups bool `json:"drop_groups"`
}

// namespaced reports whether commands run in the holder's namespaces.
func (p *commandPolicy) namespaced() bool { return p.Isolation == protocol.IsolationPIDNamespace }

// validate refuses a policy whose parts contradict each other or that names what no command could be given; it
// runs once, before any command.
func (p *commandPolicy) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if p.Isolation != protocol.IsolationPIDNamespace && p.Isolation != protocol.IsolationSubreaperInit {
		bad("isolation %q: allowed are %q and %q", p.Isolation, protocol.IsolationPIDNamespace, protocol.IsolationSubreaperInit)
	}
	if !filepath.IsAbs(p.Dir) {
		bad("the working folder %q is not an absolute path", p.Dir)
	}
	if p.UID == 0 || p.GID == 0 {
		bad("commands would run as root (%d:%d)", p.UID, p.GID)
	}
	if p.Layer && !p.namespaced() {
		bad("a layer per command needs the namespace mode")
	}
	if len(p.PrivateLayers) > layer.MaxPrivate {
		bad("%d private folders with a layer of their own; at most %d", len(p.PrivateLayers), layer.MaxPrivate)
	}
	for _, l := range p.PrivateLayers {
		if !filepath.IsAbs(l.Dir) || (l.Also != "" && !filepath.IsAbs(l.Also)) || rootfs.Within(l.Dir, p.Dir) || rootfs.Within(p.Dir, l.Dir) ||
			strings.ContainsRune(l.Dir+l.Also, 0) {
			bad("the private folder %q (also at %q) must be an absolute path outside the workspace", l.Dir, l.Also)
		}
	}
	if p.Seccomp.Fallback == p.namespaced() {
		bad("the seccomp filter's fallback rules are for the fallback mode only, and it needs them")
	}
	if p.Rules.NetHandled == p.namespaced() {
		bad("Landlock's network rules are for the fallback mode only, and it needs them (no network namespace)")
	}
	if p.Landlock == protocol.LandlockEnforced && len(p.Rules.WriteDirs) == 0 {
		bad("Landlock with no folder to write")
	}
	for _, r := range p.Rlimits {
		if _, ok := confine.RlimitByName[r.Name]; !ok {
			bad("unknown rlimit %q", r.Name)
		}
	}
	for _, s := range slices.Concat([]string{p.Dir}, p.Env, p.Rules.ReadDirs, p.Rules.ReadFiles, p.Rules.WriteDirs, p.Rules.Devices) {
		if strings.ContainsRune(s, 0) {
			bad("%q holds a NUL byte", s)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the sandbox policy: %w", err)
	}
	return nil
}
