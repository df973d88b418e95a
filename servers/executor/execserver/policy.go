package execserver

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// Policy decides which commands may run, before anything runs. Deny patterns win over allow patterns; with allow
// patterns set, a command must match one of them. Patterns are RE2 regular expressions matched anywhere in the
// command text (anchor them with ^ and $ to match the whole command).
//
// A policy is a guard rail for honest mistakes and a statement of intent, not a sandbox: a shell command can spell
// the same thing many ways. The confinement of the backend is what holds against a hostile command.
type Policy struct {
	allow, deny []*regexp.Regexp
}

// NewPolicy compiles allow and deny patterns.
func NewPolicy(allow, deny []string) (*Policy, error) {
	p := &Policy{}
	for _, s := range allow {
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, fmt.Errorf("allow pattern %q: %w", s, err)
		}
		p.allow = append(p.allow, re)
	}
	for _, s := range deny {
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, fmt.Errorf("deny pattern %q: %w", s, err)
		}
		p.deny = append(p.deny, re)
	}
	return p, nil
}

// Check returns nil when command may run, or an error that names the rule that refused it.
func (p *Policy) Check(command string) error {
	if p == nil {
		return nil
	}
	for _, re := range p.deny {
		if re.MatchString(command) {
			return fmt.Errorf("command refused by policy: it matches the deny pattern %q", re.String())
		}
	}
	if len(p.allow) == 0 || slices.ContainsFunc(p.allow, func(re *regexp.Regexp) bool { return re.MatchString(command) }) {
		return nil
	}
	return fmt.Errorf("command refused by policy: it matches none of the allow patterns (%s)", p.allowList())
}

func (p *Policy) allowList() string {
	s := make([]string, len(p.allow))
	for i, re := range p.allow {
		s[i] = fmt.Sprintf("%q", re.String())
	}
	return strings.Join(s, ", ")
}

// Describe is the policy for the health endpoint and the start-up log.
func (p *Policy) Describe() protocol.CommandPolicy {
	if p == nil || len(p.allow)+len(p.deny) == 0 {
		return protocol.CommandPolicy{}
	}
	str := func(rs []*regexp.Regexp) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.String()
		}
		return out
	}
	return protocol.CommandPolicy{Active: true, Allow: str(p.allow), Deny: str(p.deny)}
}
