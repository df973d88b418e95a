package execserver_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
)

// TestHealthConfinementKeepsEveryKey: advertising the workspace in the backend's confinement report (a walk over its
// JSON) keeps every field the backend reports.
func TestHealthConfinementKeepsEveryKey(t *testing.T) {
	g, err := pathguard.Open(t.TempDir(), pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	b, err := local.New(local.Config{Workspace: g.Dir(), CacheDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ex, err := execserver.New(execserver.Config{}, b, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(m))
	}
	want, got := keys(b.Confinement()), keys(ex.Health().Confinement)
	if !slices.Equal(got, want) {
		t.Errorf("health confinement keys\n got %v\nwant %v", got, want)
	}
	if c := ex.Health().Confinement; c.LocalConfinement == nil || c.Mode != protocol.IsolationPIDNamespace || c.DockerConfinement != nil {
		t.Errorf("the local backend's report is not read as local: %+v", c)
	}
}
