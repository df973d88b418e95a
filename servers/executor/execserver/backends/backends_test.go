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
	net    protocol.NetworkConfinement
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
		return &fakeLocal{c: protocol.LocalConfinement{Mode: protocol.IsolationPIDNamespace, Landlock: protocol.LandlockEnforced, LandlockABI: 7},
			net: protocol.NetworkPrivateLoopback}
	}
	fallbackMode = func(landlock protocol.LandlockState, net protocol.NetworkConfinement) *fakeLocal {
		return &fakeLocal{c: protocol.LocalConfinement{Mode: protocol.IsolationSubreaperInit, Landlock: landlock}, net: net}
	}
)

// TestChooseWithoutDocker runs the automatic choice against fake local backends with no engine (the host a socket
// that does not exist), so each row of the order is reached without Docker and without the kernel's say. The
// choice is checked by its rule; an error by what it tells the user.
func TestChooseWithoutDocker(t *testing.T) {
	noEngine := docker.Config{Host: "unix:///nonexistent/docker.sock"}
	cases := []struct {
		name         string
		local        *fakeLocal
		localErr     error
		noNamespaces bool
		backend      string               // "" for an error
		rule         protocol.BackendRule // of a choice
		want         []string             // in the error
		closed       bool                 // the local backend was closed
	}{
		{"namespaces", namespacedMode(), nil, false, Local, protocol.RuleNamespaces, nil, false},
		{"fallback asked for", fallbackMode(protocol.LandlockUnavailable, protocol.NetworkSeccomp), nil, true, Local, protocol.RuleFallbackAsked, nil, false},
		{"fallback that confines", fallbackMode(protocol.LandlockEnforced, protocol.NetworkSeccomp), nil, false, Local, protocol.RuleFallback, nil, false},
		{"fallback that confines, Landlock's TCP rules too", fallbackMode(protocol.LandlockEnforced, protocol.NetworkSeccompLandlock), nil, false, Local, protocol.RuleFallback, nil, false},
		{"fallback without Landlock", fallbackMode(protocol.LandlockUnavailable, protocol.NetworkSeccomp), nil, false, "", protocol.RuleUnknown,
			[]string{"no backend can run commands here", "its fallback does not confine: Landlock is unavailable",
				"-backend local takes the fallback", "no Docker Engine answers at unix:///nonexistent/docker.sock", "docker build -f deploy/Dockerfile.exec"}, true},
		{"fallback with Landlock off", fallbackMode(protocol.LandlockOff, protocol.NetworkSeccomp), nil, false, "", protocol.RuleUnknown,
			[]string{"Landlock is off"}, true},
		{"fallback without seccomp", fallbackMode(protocol.LandlockEnforced, protocol.NetworkLandlockTCP), nil, false, "", protocol.RuleUnknown,
			[]string{"no seccomp network filter (network landlock-tcp)"}, true},
		{"fallback unconfined", fallbackMode(protocol.LandlockEnforced, protocol.NetworkUnconfined), nil, false, "", protocol.RuleUnknown,
			[]string{"no seccomp network filter (network unconfined)"}, true},
		{"a report never filled in", &fakeLocal{}, nil, false, "", protocol.RuleUnknown, []string{"Landlock is unknown"}, true},
		{"no local backend", nil, errors.New("local backend: made unusable"), false, "", protocol.RuleUnknown,
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
			switch {
			case c.backend == "" && (err == nil || !errors.Is(err, ErrNoBackend)):
				t.Fatalf("want ErrNoBackend, got backend %v, %+v, %v", b, choice, err)
			case c.backend != "" && (err != nil || b.Name() != c.backend || choice.Backend != c.backend || choice.Requested != Auto ||
				choice.Rule != c.rule || choice.Reason == ""):
				t.Fatalf("want %s by rule %s, got %+v (rule %s), %v", c.backend, c.rule, choice, choice.Rule, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
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
	if err != nil || b != backend.Backend(f) || choice.Requested != Local || choice.Rule != protocol.RuleAsked {
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
