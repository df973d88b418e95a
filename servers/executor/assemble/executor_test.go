package assemble

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/backends"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
)

// stubLocal is a local backend that runs nothing: what New builds the tool server over in these tests.
type stubLocal struct{ closed bool }

func (*stubLocal) Name() string { return "local" }
func (*stubLocal) Run(context.Context, backend.Request) (backend.Result, error) {
	return backend.Result{}, errors.New("not run")
}
func (*stubLocal) Confinement() protocol.Confinement { return protocol.Confinement{} }
func (s *stubLocal) Close() error                    { s.closed = true; return nil }

func guard(t *testing.T) *pathguard.Guard {
	t.Helper()
	g, err := pathguard.Open(t.TempDir(), pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestNewSharesTheSettingsOfBothBackends: the local backend gets the workspace, the cache folder, the limits in
// its units and the parsed network; the executor reports the choice; Close closes the backend.
func TestNewSharesTheSettingsOfBothBackends(t *testing.T) {
	g := guard(t)
	var got local.Config
	stub := &stubLocal{}
	o := Options{Backend: backends.Local, CacheDir: "/tmp/caches", Limits: Limits{PIDs: 40, MemoryMB: 300, TotalMemoryMB: -1, MaxWorkspaceBytes: 1 << 30, MaxWorkspaceInodes: 5000},
		Network: Network{Allow: "example.com"}, Local: local.Config{ExtraReadDirs: []string{"/opt/x"}}}
	ex, err := New(context.Background(), g, o, nil, WithLocalStarter(func(c local.Config, _ *slog.Logger) (backend.Backend, error) {
		got = c
		return stub, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Workspace != g.Dir() || got.CacheDir != "/tmp/caches" || got.PidsLimit != 40 || got.MemoryLimit != 300<<20 ||
		got.TotalMemoryLimit != -1<<20 || got.MaxWorkspaceBytes != 1<<30 || got.MaxWorkspaceInodes != 5000 || got.Network.Allow.Empty() || len(got.ExtraReadDirs) != 1 {
		t.Errorf("the local backend got %+v", got)
	}
	if h := ex.Health(); h.BackendChoice != "explicit" || ex.Choice.Backend != backends.Local {
		t.Errorf("choice %q, %+v", h.BackendChoice, ex.Choice)
	}
	ex.Close()
	if !stub.closed {
		t.Error("Close left the backend open")
	}
}

// TestNewRefusesBadSettings: each setting given as text is checked, and a backend that was built for a refused
// executor is closed.
func TestNewRefusesBadSettings(t *testing.T) {
	g := guard(t)
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Backend: "chroot"}, `unknown backend "chroot": use auto, local or docker`},
		{Options{Policy: Policy{Allow: []string{"("}}}, "policy:"},
		{Options{Protection: Protection{Protect: []string{"/etc/passwd"}}}, "absolute"},
		{Options{Network: Network{Secrets: []string{"no-source"}}}, "no-source"},
		{Options{Network: Network{UpstreamCA: "/nonexistent/ca.pem"}}, "-upstream-ca"},
		{Options{Backend: backends.Local, Serving: execserver.Config{OutputCap: 5 << 20}}, "must be between"},
		{Options{Limits: Limits{MaxWorkspaceInodes: 10}}, "-max-workspace-inodes (MAX_WORKSPACE_INODES) is 10: give a number of files, folders and links of at least 1000"},
		{Options{Limits: Limits{MaxWorkspaceInodes: -5}}, "0 for the default (1000000) or -1 for no cap"},
	} {
		stub := &stubLocal{}
		_, err := New(context.Background(), g, c.o, nil, WithLocalStarter(func(local.Config, *slog.Logger) (backend.Backend, error) { return stub, nil }))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an error saying %q", c.o, err, c.want)
		}
		if !stub.closed && strings.Contains(c.want, "between") {
			t.Error("the backend of a refused executor was left open")
		}
	}
}
