package sandbox_test

import (
	"testing"

	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
)

// TestOutsiderProbe is the outsider's side of TestLocalServersRefuseAnotherUser (mcptest.Outsider.Probe).
func TestOutsiderProbe(t *testing.T) { mcptest.OutsiderProbe(t) }

// TestLocalServersRefuseAnotherUser: the agent's in-process servers listen on loopback, which every user of the
// machine reaches; another user (made for the test) is refused by both without the token and with a wrong one, and
// gets in with the token the agent holds in memory (positive control: the refusal is the token's doing).
func TestLocalServersRefuseAnotherUser(t *testing.T) {
	out := mcptest.NewOutsider(t)
	local, err := sandbox.StartLocal(sandbox.LocalOptions{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	spec := mcptest.ProbeSpec{RightToken: map[string]string{}}
	for _, ep := range local.Endpoints {
		if ep.Token == "" {
			t.Fatalf("in-process server %s has no token", ep.URL)
		}
		spec.URLs = append(spec.URLs, ep.URL)
		spec.RightToken[ep.URL] = ep.Token
	}
	rep := out.Probe(t, "TestOutsiderProbe", spec)
	mcptest.CheckRefused(t, rep, spec)
}
