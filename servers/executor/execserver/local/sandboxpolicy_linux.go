package local

import (
	"fmt"
	"slices"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// sandboxPolicy is the backend's policy as data for /healthz: the same facts as the sentences of Confinement, as
// fields and enumerated properties a program can check. The server adds the protected patterns.
func (b *localBackend) sandboxPolicy() *protocol.SandboxPolicy {
	a := b.applied
	ns := b.policy.namespaced()
	p := &protocol.SandboxPolicy{
		Root: protocol.RootHost, ReadPaths: b.readDirs(), WritePaths: b.policy.Rules.WriteDirs, ProtectedEnforcement: protocol.ProtectedSweep,
		User: fmt.Sprintf("%d:%d", b.policy.UID, b.policy.GID), Network: protocol.SandboxNetworkNone,
	}
	if ns {
		p.Root, p.ReadPaths, p.WritePaths, p.ProtectedEnforcement = protocol.RootMinimal, b.rootPaths[0], b.rootPaths[1], protocol.ProtectedReadOnly
	}
	if b.policy.Layer {
		p.ProtectedEnforcement = protocol.ProtectedLayer
	}
	if b.egress != nil {
		p.Network = protocol.SandboxNetworkAllowlist // -net-allow: out only through the egress proxy (confinement.egress)
	}
	prop := func(name string, holds bool, note string) {
		p.Properties = append(p.Properties, protocol.Property{Name: name, Holds: holds, Note: note})
	}
	prop("minimal_root", ns, map[bool]string{true: "an empty root with only the policy's paths bound in", false: "the host's tree: Landlock decides what may be opened"}[ns])
	prop("host_sockets_unreachable", true, map[bool]string{true: "no host socket exists in the minimal root", false: "socket(AF_UNIX) refused by seccomp"}[ns])
	prop("workspace_layer", b.policy.Layer, map[bool]string{true: "each command works on a copy-on-write layer; the executor applies it through pathguard, refusing protected paths", false: b.layerNote}[b.policy.Layer])
	prop("protected_files_read_only", ns, map[bool]string{true: "the command's writes go to its own layer (or, without one, read-only bind mounts of the protected paths present when it starts)", false: "no mount namespace: changes are undone after the command"}[ns])
	if !b.policy.Layer { // with the layer there is nothing to sweep: what the guard refuses never reaches the workspace
		prop("protected_files_swept", true, "after every command and process: new protected paths quarantined"+map[bool]string{true: "", false: ", changed ones put back"}[ns])
	}
	prop("pid_namespace", a.PIDNamespace, "")
	prop("private_network", ns, map[bool]string{true: "a network namespace with only a loopback" + map[bool]string{true: "; out only through the egress proxy, to -net-allow", false: ""}[b.egress != nil],
		false: "Internet sockets refused by seccomp and Landlock"}[ns])
	prop("private_proc", a.PrivateProc, "")
	prop("private_tmp", a.PrivateTmp, "")
	prop("no_sys", ns, "")
	prop("landlock", a.Landlock == protocol.LandlockEnforced, a.Landlock.String())
	prop("seccomp", a.Seccomp, "")
	prop("no_capabilities", a.CapsDropped, "")
	prop("no_new_privs", a.NoNewPrivs, "")
	prop("not_root_on_host", b.policy.UID != 0 && b.policy.GID != 0, "")
	prop("pids_cgroup", b.pids != nil, b.pidsNote)
	prop("memory_cgroup", b.mem != nil, b.memNote)
	prop("disk_cap", b.maxDisk > 0, fmt.Sprintf("%d bytes", b.maxDisk))
	held := 0
	for _, q := range p.Properties {
		if q.Holds {
			held++
		}
	}
	p.Summary = fmt.Sprintf("local %s: %s root, commands as %s, network %s, %d of %d properties hold", b.mode(), p.Root, p.User, p.Network,
		held, len(p.Properties))
	p.ReadPaths, p.WritePaths = slices.Clone(p.ReadPaths), slices.Clone(p.WritePaths)
	return p
}
