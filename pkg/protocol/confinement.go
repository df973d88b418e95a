package protocol

import (
	"fmt"
	"slices"
	"strings"
)

// The confinement report's enumerations. Each is a small integer, so code can only compare it with its own
// constants: a check that matched a word of a sentence ("enforced", "seccomp") does not compile. In JSON, logs and
// messages each value is a stable word, listed beside its type (docs/executor.md "Where what is active" explains
// them). The zero value of every enumeration is "unknown": a report that was never filled in promises nothing.

// ProcessIsolation is how no process of a command outlives it.
type ProcessIsolation uint8

const (
	IsolationUnknown ProcessIsolation = iota
	// IsolationPIDNamespace: a fresh PID namespace per command (a container's, for docker); killing its PID 1
	// kills every process in it.
	IsolationPIDNamespace
	// IsolationSubreaperInit: the local backend's fallback without namespaces. A subreaper init per command kills
	// every descendant; seccomp (and Landlock's signal scoping, where present) keeps the command from signalling its
	// init or the server, and from ptrace.
	IsolationSubreaperInit
)

var processIsolationWords = []string{"unknown", "pid-namespace", "subreaper-init"}

// LandlockState is whether Landlock confines a command's files (and, from ABI 4, its TCP).
type LandlockState uint8

const (
	LandlockUnknown     LandlockState = iota
	LandlockEnforced                  // every command runs in a Landlock domain (LocalConfinement.LandlockABI)
	LandlockUnavailable               // asked for, but the kernel has no Landlock
	LandlockOff                       // turned off (-no-landlock)
)

var landlockWords = []string{"unknown", "enforced", "unavailable", "off"}

// NetworkConfinement is what network a command has.
type NetworkConfinement uint8

const (
	NetworkUnknown NetworkConfinement = iota
	// NetworkPrivateLoopback: a network namespace of the command's own with only a loopback; no route out.
	NetworkPrivateLoopback
	// NetworkSharedLoopback: only a loopback, shared by this executor's commands (docker: the network namespace of a
	// holder container on network none); no route out.
	NetworkSharedLoopback
	// NetworkEgressProxy: a loopback-only namespace whose one way out is the executor's egress proxy
	// (HTTP_PROXY, HTTPS_PROXY), to the hosts of Confinement.Egress.Allow.
	NetworkEgressProxy
	// NetworkSeccompLandlock: no namespace; Internet sockets refused by seccomp (socket(AF_INET/AF_INET6) and
	// io_uring) and TCP connect and bind by Landlock.
	NetworkSeccompLandlock
	// NetworkSeccomp: no namespace; Internet sockets refused by seccomp only.
	NetworkSeccomp
	// NetworkLandlockTCP: no namespace and no seccomp filter; Landlock refuses TCP connect and bind, UDP and MPTCP
	// are NOT restricted.
	NetworkLandlockTCP
	// NetworkUnconfined: commands reach whatever the server can.
	NetworkUnconfined
)

var networkWords = []string{"unknown", "private-loopback", "shared-loopback", "egress-proxy", "seccomp+landlock", "seccomp",
	"landlock-tcp", "unconfined"}

// RefusesInternetSockets says a command cannot open an Internet socket: the network it has no route out of, or
// the seccomp filter that refuses the socket.
func (n NetworkConfinement) RefusesInternetSockets() bool {
	return n != NetworkUnknown && n != NetworkLandlockTCP && n != NetworkUnconfined
}

// HasLoopback says commands have a loopback of their own (alone or shared by the executor's commands) on which
// a server can listen: a network namespace, which the fallback modes lack.
func (n NetworkConfinement) HasLoopback() bool {
	return n == NetworkPrivateLoopback || n == NetworkSharedLoopback || n == NetworkEgressProxy
}

// Capabilities is what capabilities a command keeps.
type Capabilities uint8

const (
	CapabilitiesUnknown Capabilities = iota
	// CapabilitiesNone: every set cleared, the bounding set emptied, secure bits locked, no_new_privs (docker: all
	// dropped).
	CapabilitiesNone
	// CapabilitiesBoundingKept: effective, permitted, inheritable and ambient cleared, no_new_privs; the bounding set
	// kept (the fallback without CAP_SETPCAP).
	CapabilitiesBoundingKept
	// CapabilitiesKept: NOT dropped.
	CapabilitiesKept
)

var capabilitiesWords = []string{"unknown", "none", "bounding-set-kept", "not-dropped"}

// Hidden is one part of the host a command cannot see.
type Hidden uint8

const (
	HiddenUnknown Hidden = iota
	// HiddenProcesses: /proc shows only the command's own processes (a fresh procfs of its PID namespace, or
	// hidepid=invisible in the fallback).
	HiddenProcesses
	// HiddenHostTree: / is a minimal root with only the read and write folders (no /sys, /run, /var, /opt, /home,
	// no host socket).
	HiddenHostTree
	// HiddenShm: /dev/shm is private.
	HiddenShm
	// HiddenTmp: /tmp is the private temp folder.
	HiddenTmp
)

var hiddenWords = []string{"unknown", "other-processes", "host-tree", "host-shm", "host-tmp"}

// SeccompProfile is the system call filter of every docker container.
type SeccompProfile uint8

const (
	SeccompUnknown SeccompProfile = iota
	// SeccompGoalbox: the backend's own, the Engine's default allow-list (github.com/moby/profiles/seccomp) without
	// what a command has no use for (docs/executor-docker.md).
	SeccompGoalbox
	// SeccompEngineDefault: the Engine's default (a server not on Linux does not build its own).
	SeccompEngineDefault
)

var seccompWords = []string{"unknown", "goalbox", "engine-default"}

// ProtectedEnforcement is how the protected project paths are kept.
type ProtectedEnforcement uint8

const (
	ProtectedUnknown ProtectedEnforcement = iota
	// ProtectedNone: nothing is protected (no patterns).
	ProtectedNone
	// ProtectedReadOnly: read-only bind mounts of the protected paths present when a command starts (the kernel
	// refuses a change); a sweep after each command removes new ones.
	ProtectedReadOnly
	// ProtectedSweep: changes are undone after each command.
	ProtectedSweep
	// ProtectedLayer: each command works on a copy-on-write layer of the workspace that the executor applies
	// through pathguard; a protected path is refused whatever the command renamed.
	ProtectedLayer
)

var protectedWords = []string{"unknown", "none", "read-only", "sweep", "layer"}

// RootKind is what a command's / is.
type RootKind uint8

const (
	RootUnknown RootKind = iota
	RootMinimal          // an empty root with only ReadPaths and WritePaths bound in: nothing else can be named
	RootHost             // the host's tree, with Landlock deciding what may be opened
	RootImage            // a container's image
)

var rootWords = []string{"unknown", "minimal", "host", "image"}

// SandboxNetwork is SandboxPolicy's network in one word.
type SandboxNetwork uint8

const (
	SandboxNetworkUnknown   SandboxNetwork = iota
	SandboxNetworkNone                     // no interface but a private loopback
	SandboxNetworkAllowlist                // out only through the egress proxy, to -net-allow
)

var sandboxNetworkWords = []string{"unknown", "none", "allowlist"}

// BackendRule is the step of the executor's backend choice that chose its backend (execserver/backends).
type BackendRule uint8

const (
	RuleUnknown       BackendRule = iota
	RuleAsked                     // named by -backend local or -backend docker
	RuleNamespaces                // -backend auto: the local backend, with namespaces of its own here
	RuleFallbackAsked             // -backend auto with -no-namespaces: the local backend's fallback, the user's choice
	RuleDocker                    // -backend auto: the local backend has no namespaces (or cannot run), a Docker Engine answers
	RuleFallback                  // -backend auto: no Docker backend, and the local backend's fallback confines files and network
)

var backendRuleWords = []string{"unknown", "asked", "namespaces", "no-namespaces-flag", "docker-answers", "local-fallback"}

// CgroupLimit is a limit a cgroup enforces: per command and for all of one executor's commands together. Zero
// PerCommand is no cgroup; Note then says why, for people.
type CgroupLimit struct {
	PerCommand int64  `json:"per_command"`
	Total      int64  `json:"total,omitempty"`
	Note       string `json:"note,omitempty"`
}

func (v ProcessIsolation) String() string     { return word(v, processIsolationWords) }
func (v LandlockState) String() string        { return word(v, landlockWords) }
func (v NetworkConfinement) String() string   { return word(v, networkWords) }
func (v Capabilities) String() string         { return word(v, capabilitiesWords) }
func (v Hidden) String() string               { return word(v, hiddenWords) }
func (v SeccompProfile) String() string       { return word(v, seccompWords) }
func (v ProtectedEnforcement) String() string { return word(v, protectedWords) }
func (v RootKind) String() string             { return word(v, rootWords) }
func (v SandboxNetwork) String() string       { return word(v, sandboxNetworkWords) }
func (v BackendRule) String() string          { return word(v, backendRuleWords) }

func (v ProcessIsolation) MarshalText() ([]byte, error)     { return marshalWord(v, processIsolationWords) }
func (v LandlockState) MarshalText() ([]byte, error)        { return marshalWord(v, landlockWords) }
func (v NetworkConfinement) MarshalText() ([]byte, error)   { return marshalWord(v, networkWords) }
func (v Capabilities) MarshalText() ([]byte, error)         { return marshalWord(v, capabilitiesWords) }
func (v Hidden) MarshalText() ([]byte, error)               { return marshalWord(v, hiddenWords) }
func (v SeccompProfile) MarshalText() ([]byte, error)       { return marshalWord(v, seccompWords) }
func (v ProtectedEnforcement) MarshalText() ([]byte, error) { return marshalWord(v, protectedWords) }
func (v RootKind) MarshalText() ([]byte, error)             { return marshalWord(v, rootWords) }
func (v SandboxNetwork) MarshalText() ([]byte, error)       { return marshalWord(v, sandboxNetworkWords) }
func (v BackendRule) MarshalText() ([]byte, error)          { return marshalWord(v, backendRuleWords) }

func (v *ProcessIsolation) UnmarshalText(b []byte) error {
	return unmarshalWord(b, v, processIsolationWords, "process isolation")
}
func (v *LandlockState) UnmarshalText(b []byte) error {
	return unmarshalWord(b, v, landlockWords, "landlock")
}
func (v *NetworkConfinement) UnmarshalText(b []byte) error {
	return unmarshalWord(b, v, networkWords, "network")
}
func (v *Capabilities) UnmarshalText(b []byte) error {
	return unmarshalWord(b, v, capabilitiesWords, "capabilities")
}
func (v *Hidden) UnmarshalText(b []byte) error { return unmarshalWord(b, v, hiddenWords, "hidden") }
func (v *SeccompProfile) UnmarshalText(b []byte) error {
	return unmarshalWord(b, v, seccompWords, "seccomp")
}
func (v *ProtectedEnforcement) UnmarshalText(b []byte) error {
	return unmarshalWord(b, v, protectedWords, "protected enforcement")
}
func (v *RootKind) UnmarshalText(b []byte) error { return unmarshalWord(b, v, rootWords, "root") }
func (v *SandboxNetwork) UnmarshalText(b []byte) error {
	return unmarshalWord(b, v, sandboxNetworkWords, "sandbox network")
}

func (v *BackendRule) UnmarshalText(b []byte) error {
	return unmarshalWord(b, v, backendRuleWords, "backend rule")
}

// word is v's word, or its number for a value no word names (a newer peer's).
func word[E ~uint8](v E, words []string) string {
	if int(v) < len(words) {
		return words[v]
	}
	return fmt.Sprintf("%d", v)
}

// marshalWord refuses a value no word names, so a report never carries a number a reader cannot look up.
func marshalWord[E ~uint8](v E, words []string) ([]byte, error) {
	if int(v) >= len(words) {
		return nil, fmt.Errorf("confinement value %d has no word (known: %s)", v, strings.Join(words, ", "))
	}
	return []byte(words[v]), nil
}

func unmarshalWord[E ~uint8](b []byte, v *E, words []string, what string) error {
	i := slices.Index(words, string(b))
	if i < 0 {
		return fmt.Errorf("%s %q is not one of %s", what, b, strings.Join(words, ", "))
	}
	*v = E(i)
	return nil
}
