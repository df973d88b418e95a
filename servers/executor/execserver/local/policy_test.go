//go:build linux

package local

import (
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/confine"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/landlock"
)

// TestPolicyValidation: a policy whose parts contradict each other is refused once, at start, with what was wrong;
// the two policies New builds pass.
func TestPolicyValidation(t *testing.T) {
	ns := commandPolicy{Isolation: protocol.IsolationPIDNamespace, Dir: "/ws", UID: 1000, GID: 1000, Layer: true,
		Landlock: protocol.LandlockEnforced, Rules: landlock.Rules{WriteDirs: []string{"/ws"}}, Rlimits: []confine.Rlimit{{Name: "nofile", Value: 10}}}
	fallback := ns
	fallback.Isolation, fallback.Layer, fallback.Seccomp.Fallback, fallback.Rules.NetHandled = protocol.IsolationSubreaperInit, false, true, true
	for name, p := range map[string]commandPolicy{"namespaces": ns, "fallback": fallback} {
		if err := p.validate(); err != nil {
			t.Errorf("%s: a sound policy was refused: %v", name, err)
		}
	}
	for want, change := range map[string]func(*commandPolicy){
		"isolation":            func(p *commandPolicy) { p.Isolation = protocol.IsolationUnknown },
		"not an absolute path": func(p *commandPolicy) { p.Dir = "ws" },
		"root":                 func(p *commandPolicy) { p.UID = 0 },
		"needs the namespace": func(p *commandPolicy) {
			p.Isolation, p.Seccomp.Fallback, p.Rules.NetHandled = protocol.IsolationSubreaperInit, true, true
		},
		"seccomp":                func(p *commandPolicy) { p.Seccomp.Fallback = true },
		"network rules":          func(p *commandPolicy) { p.Rules.NetHandled = true },
		"no folder to write":     func(p *commandPolicy) { p.Rules.WriteDirs = nil },
		`unknown rlimit "core2"`: func(p *commandPolicy) { p.Rlimits = append(p.Rlimits, confine.Rlimit{Name: "core2", Value: 0}) },
		"NUL":                    func(p *commandPolicy) { p.Env = []string{"A=\x00"} },
	} {
		p := ns
		p.Rlimits = append([]confine.Rlimit(nil), ns.Rlimits...)
		change(&p)
		if err := p.validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a policy with a bad %s: got %v", want, err)
		}
	}
}
