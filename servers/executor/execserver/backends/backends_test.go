package backends

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
)

// fakeLocal is a local backend as the chooser sees it: a name and a confinement report.
type fakeLocal struct {
	c      protocol.LocalConfinement
	net    string
	closed bool
}

func (f *fakeLocal) Name() string { return "local" }
func (f *fakeLocal) Run(context.Context, backend.Request) (backend.Result, error) {
	return backend.Result{}, errors.New("not run")
}
func (f *fakeLocal) Confinement() protocol.Confinement {
	c := f.c
	return protocol.Confinement{Network: f.net, LocalConfinement: &c}
}
func (f *fakeLocal) Close() error { f.closed = true; return nil }

var (
	namespacedMode = func() *fakeLocal {
		return &fakeLocal{c: protocol.LocalConfinement{Mode: local.ModeNamespaces, Landlock: "enforced (ABI 7)"}, net: "private network namespace"}
	}
	fallbackMode = func(landlock string) *fakeLocal {
		return &fakeLocal{c: protocol.LocalConfinement{Mode: "subreaper-init (NO namespaces)", Landlock: landlock},
			net: "no Internet sockets (seccomp: socket(AF_INET/AF_INET6) and io_uring refused)"}
	}
)

// TestChooseWithoutDocker runs the automatic choice against fake local backends with no engine (the host a socket
// that does not exist), so each row of the order is reached without Docker and without the kernel's say.
func TestChooseWithoutDocker(t *testing.T) {
	noEngine := docker.Config{Host: "unix:///nonexistent/docker.sock"}
	cases := []struct {
		name         string
		local        *fakeLocal
		localErr     error
		noNamespaces bool
		backend      string   // "" for an error
		want         []string // in the reason or the error
		closed       bool     // the local backend was closed
	}{
		{"namespaces", namespacedMode(), nil, false, Local, []string{"namespaces of their own", "pid-namespace"}, false},
		{"fallback asked for", fallbackMode("unavailable"), nil, true, Local, []string{"-no-namespaces was given"}, false},
		{"fallback that confines", fallbackMode("enforced (ABI 7)"), nil, false, Local,
			[]string{"no Docker Engine answers at unix:///nonexistent/docker.sock", "still confines files (Landlock)"}, false},
		{"fallback without Landlock", fallbackMode("unavailable"), nil, false, "",
			[]string{"no backend can run commands here", "its fallback does not confine: Landlock is unavailable",
				"-backend local takes the fallback", "no Docker Engine answers at unix:///nonexistent/docker.sock", "docker build -f deploy/Dockerfile.exec"}, true},
		{"fallback without seccomp", &fakeLocal{c: protocol.LocalConfinement{Mode: "subreaper-init (NO namespaces)", Landlock: "enforced (ABI 7)"},
			net: "Landlock only: no TCP connect or bind"}, nil, false, "", []string{"no seccomp network filter"}, true},
		{"no local backend", nil, errors.New("local backend: made unusable"), false, "",
			[]string{"no backend can run commands here", "made unusable", "Docker Engine"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Backend: Auto, Docker: noEngine, PingTimeout: 2 * time.Second, Local: local.Config{NoNamespaces: c.noNamespaces}}
			b, choice, err := Open(context.Background(), t.TempDir(), cfg, func(local.Config, *slog.Logger) (backend.Backend, error) {
				if c.localErr != nil {
					return nil, c.localErr
				}
				return c.local, nil
			})
			text := choice.Reason
			if err != nil {
				text = err.Error()
			}
			switch {
			case c.backend == "" && (err == nil || !errors.Is(err, ErrNoBackend)):
				t.Fatalf("want ErrNoBackend, got backend %v, %+v, %v", b, choice, err)
			case c.backend != "" && (err != nil || b.Name() != c.backend || choice.Backend != c.backend || choice.Requested != Auto):
				t.Fatalf("want %s, got %+v, %v", c.backend, choice, err)
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q does not say %q", text, w)
				}
			}
			if c.local != nil && c.local.closed != c.closed {
				t.Errorf("local backend closed: %v, want %v", c.local.closed, c.closed)
			}
		})
	}
}

// TestExplicitAndUnknown: a named backend is that backend (its error untouched), and only the three names are taken.
func TestExplicitAndUnknown(t *testing.T) {
	f := namespacedMode()
	b, choice, err := Open(context.Background(), t.TempDir(), Config{Backend: Local},
		func(local.Config, *slog.Logger) (backend.Backend, error) { return f, nil })
	if err != nil || b != backend.Backend(f) || choice.Requested != Local || !strings.HasPrefix(choice.Reason, "asked for (-backend local)") {
		t.Errorf("local: %+v, %v", choice, err)
	}
	_, _, err = Open(context.Background(), t.TempDir(), Config{Backend: Docker, Docker: docker.Config{Host: "unix:///nonexistent/docker.sock", User: "4242:4242", CacheHostDir: "-"}}, local.New)
	if err == nil || errors.Is(err, ErrNoBackend) || !strings.Contains(err.Error(), "does not answer at unix:///nonexistent/docker.sock") {
		t.Errorf("docker without an engine: %v", err)
	}
	if _, _, err := Open(context.Background(), t.TempDir(), Config{Backend: "chroot"}, local.New); err == nil || !strings.Contains(err.Error(), "use auto, local or docker") {
		t.Errorf("unknown: %v", err)
	}
}
