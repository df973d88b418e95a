// Package backends builds the executor's backend by name — local, docker, or auto, which chooses — for both the
// executor command (servers/executor) and the agent's in-process executor (agent/sandbox): one implementation of
// the choice. It is the one package that knows every backend.
//
// The automatic choice (Auto), strongest confinement first:
//
//  1. local, when the local backend starts here with namespaces: on Linux, its probe command ran in PID, mount,
//     network and IPC namespaces of its own under Landlock and seccomp. It needs nothing installed and is the
//     fastest. When -no-namespaces was given, the fallback it asks for is the user's choice and is taken as such.
//  2. docker, when a Docker Engine answers a ping within PingTimeout (DOCKER_HOST, the current docker context —
//     Docker Desktop, Colima, OrbStack — or the default socket): always so on macOS and Windows, where the local
//     backend cannot run, and on Linux where namespaces are not permitted (a container, a locked-down kernel),
//     because a container per command confines more than the local backend's fallback.
//  3. local in its fallback mode (a subreaper init per command, no namespaces), when no engine answers (or one
//     answers but the docker backend cannot start, e.g. its image was never built) and the fallback still
//     confines: Landlock enforced (files) and seccomp on (no Internet sockets). What it lacks, and the docker
//     backend's error, are in the reason, the log and /healthz.
//  4. otherwise none: Open fails with ErrNoBackend and a message that says what to install, or the docker
//     backend's own error (naming the command that builds the image) when the engine answered.
package backends

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
)

// The backend names Config.Backend takes.
const (
	Auto   = "auto"
	Local  = "local"
	Docker = "docker"
)

// Names are the values Config.Backend takes, for messages.
const Names = "auto, local or docker"

// CheckName says whether name is one Config.Backend takes ("" is Auto): the one check of a backend's name, for the
// executor's flags, the agent's and Open.
func CheckName(name string) error {
	switch name {
	case Auto, "", Local, Docker:
		return nil
	}
	return fmt.Errorf("unknown backend %q: use %s", name, Names)
}

// DefaultPingTimeout is how long the automatic choice waits for a Docker Engine to answer.
const DefaultPingTimeout = 3 * time.Second

// ErrNoBackend is what Open returns, wrapped, when the automatic choice finds no backend that can confine commands.
var ErrNoBackend = errors.New("no backend can run commands here")

// Config says which backend to build and how. The workspace fields of Local and Docker are filled in by Open.
type Config struct {
	// Backend is Auto (also when empty), Local or Docker.
	Backend string
	// Local configures the local backend.
	Local local.Config
	// Docker configures the docker backend.
	Docker docker.Config
	// PingTimeout bounds the automatic choice's Docker ping. Default DefaultPingTimeout.
	PingTimeout time.Duration
	// Logger receives the backends' logs; nil discards them.
	Logger *slog.Logger
	// RequireNamespaces refuses a backend whose commands run without namespaces of their own (the local
	// backend's fallback), whichever way it was chosen: a person who would rather have no executor than that one.
	RequireNamespaces bool
}

// LocalStarter starts the local backend: local.New, or in tests a stand-in that plays a machine where the local
// backend cannot run, or runs without namespaces.
type LocalStarter func(local.Config, *slog.Logger) (backend.Backend, error)

// Choice is which backend Open built and why, for the start-up log and the health report.
type Choice struct {
	// Requested is what was asked for: auto, local or docker.
	Requested string
	// Backend is the backend built: local or docker.
	Backend string
	// Rule is the step that chose it, the value programs and tests check.
	Rule protocol.BackendRule
	// Reason says why, in words a person can check; nothing reads it but people.
	Reason string
}

// Open builds the backend cfg names, or chooses one (Auto), with the local backend started by startLocal
// (local.New, or a test's stand-in). workspace is the workspace's real host path (pathguard's Guard.Dir()). An error
// from an explicitly named backend is that backend's; the automatic choice fails with ErrNoBackend.
func Open(ctx context.Context, workspace string, cfg Config, startLocal LocalStarter) (backend.Backend, Choice, error) {
	b, choice, err := open(ctx, workspace, cfg, startLocal)
	if err != nil || !cfg.RequireNamespaces || !b.Confinement().WithoutNamespaces() {
		return b, choice, err
	}
	_ = b.Close()
	return nil, Choice{}, fmt.Errorf("commands would run without namespaces of their own (the local backend's fallback: %s), and "+
		"-require-namespaces refuses that: allow user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "+
		"kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu), run in a container with the executor's seccomp profile "+
		"and systempaths=unconfined, or use -backend docker", localMode(b))
}

func open(ctx context.Context, workspace string, cfg Config, startLocal LocalStarter) (backend.Backend, Choice, error) {
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.PingTimeout <= 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	cfg.Local.Workspace = workspace
	cfg.Docker.WorkspaceHostDir = workspace
	cfg.Docker.Logger = cmp.Or(cfg.Docker.Logger, cfg.Logger)
	switch cfg.Backend {
	case Local:
		b, err := startLocal(cfg.Local, cfg.Logger)
		if err != nil {
			return nil, Choice{}, err
		}
		return b, Choice{Requested: Local, Backend: Local, Rule: protocol.RuleAsked, Reason: "asked for (-backend local): " + localMode(b)}, nil
	case Docker:
		b, err := docker.New(ctx, cfg.Docker)
		if err != nil {
			return nil, Choice{}, err
		}
		return b, Choice{Requested: Docker, Backend: Docker, Rule: protocol.RuleAsked, Reason: "asked for (-backend docker): " + dockerReport(b)}, nil
	case Auto, "":
		return choose(ctx, cfg, startLocal)
	}
	return nil, Choice{}, CheckName(cfg.Backend)
}

// choose is the automatic choice (see the package's documentation).
func choose(ctx context.Context, cfg Config, startLocal LocalStarter) (backend.Backend, Choice, error) {
	choice := Choice{Requested: Auto}
	lb, localErr := startLocal(cfg.Local, cfg.Logger)
	var fallback backend.Backend // the local backend without namespaces, kept for step 3
	switch {
	case localErr != nil:
		cfg.Logger.Info("automatic backend choice: the local backend cannot run here", "error", localErr)
	case namespaced(lb):
		choice.Backend, choice.Rule, choice.Reason = Local, protocol.RuleNamespaces, "the local backend confines commands here with namespaces of their own: "+localMode(lb)
		return lb, choice, nil
	case cfg.Local.NoNamespaces:
		choice.Backend, choice.Rule, choice.Reason = Local, protocol.RuleFallbackAsked, "-no-namespaces was given, so the local backend's fallback: "+localMode(lb)
		return lb, choice, nil
	default:
		fallback = lb
		cfg.Logger.Info("automatic backend choice: the local backend has no namespaces here; looking for a Docker Engine")
	}

	engine, pingErr := docker.Ping(ctx, cfg.Docker.Host, cfg.PingTimeout)
	var dockerErr error
	if pingErr == nil {
		cfg.Docker.Host = engine.Host
		db, err := docker.New(ctx, cfg.Docker)
		if err == nil {
			if fallback != nil {
				_ = fallback.Close()
			}
			choice.Backend, choice.Rule = Docker, protocol.RuleDocker
			choice.Reason = fmt.Sprintf("%s; a Docker Engine answers at %s (%s): %s", whyNotLocal(localErr), engine.Host, engine.Source, dockerReport(db))
			return db, choice, nil
		}
		// The engine answers but the backend cannot start (most often: the image was never built).
		dockerErr = err
		cfg.Logger.Warn("automatic backend choice: a Docker Engine answers but the docker backend cannot start", "host", engine.Host, "error", err)
	} else {
		cfg.Logger.Info("automatic backend choice: no Docker Engine answers", "host", engine.Host, "error", pingErr)
	}
	noDocker := fmt.Sprintf("no Docker Engine answers at %s (%s: %v)", engine.Host, engine.Source, pingErr)
	if dockerErr != nil {
		noDocker = fmt.Sprintf("the Docker Engine at %s answers but the docker backend cannot start (%v)", engine.Host, dockerErr)
	}

	if fallback != nil {
		why := fallbackGap(fallback)
		if why == "" {
			choice.Backend, choice.Rule = Local, protocol.RuleFallback
			choice.Reason = fmt.Sprintf("the local backend has no namespaces here and %s, so the local backend's fallback, "+
				"which still confines files (Landlock) and the network (seccomp): %s", noDocker, localMode(fallback))
			return fallback, choice, nil
		}
		_ = fallback.Close()
		localErr = errors.New("it has no namespaces here and its fallback does not confine: " + why +
			" (-backend local takes the fallback as it is, with the gaps /healthz lists)")
	}
	if dockerErr != nil {
		// The docker backend's own error says what to do (build the image, fix the user): it is the one to show.
		return nil, choice, fmt.Errorf("%w: the local backend %s, and %w", ErrNoBackend, localDetail(localErr), dockerErr)
	}
	return nil, choice, fmt.Errorf("%w: the local backend %s, and %s. %s", ErrNoBackend, localDetail(localErr), noDocker, installHint())
}

// namespaced says the local backend gives every command namespaces of its own.
func namespaced(b backend.Backend) bool {
	c := b.Confinement()
	return c.LocalConfinement != nil && c.Mode == protocol.IsolationPIDNamespace
}

// fallbackGap says what keeps the local backend's fallback from confining commands, or "" when it does: Landlock
// must confine files and seccomp (or a network of their own) Internet sockets.
func fallbackGap(b backend.Backend) string {
	c := b.Confinement()
	switch {
	case c.LocalConfinement == nil:
		return "no confinement report"
	case c.Landlock != protocol.LandlockEnforced:
		return fmt.Sprintf("Landlock is %s, so commands could write wherever the server's user can", c.Landlock)
	case !c.Network.RefusesInternetSockets():
		return fmt.Sprintf("no seccomp network filter (network %s)", c.Network)
	}
	return ""
}

// localMode is the gist of the local backend's confinement.
func localMode(b backend.Backend) string {
	c := b.Confinement()
	if c.LocalConfinement == nil {
		return "backend " + b.Name()
	}
	return fmt.Sprintf("mode %s, Landlock %s, network %s", c.Mode, c.Landlock, c.Network)
}

// dockerReport is the gist of the docker backend's confinement.
func dockerReport(b backend.Backend) string {
	c := b.Confinement()
	if c.DockerConfinement == nil {
		return "backend " + b.Name()
	}
	return fmt.Sprintf("engine %s (API %s), image %s, user %s", c.Engine, c.APIVersion, c.Image, c.User)
}

// whyNotLocal is the first half of a docker choice's reason.
func whyNotLocal(localErr error) string {
	if localErr != nil {
		return "the local backend " + localDetail(localErr)
	}
	return "the local backend has no namespaces here (it would run in its weaker fallback mode)"
}

func localDetail(err error) string {
	msg := strings.TrimPrefix(err.Error(), "local backend: ")
	if runtime.GOOS != "linux" {
		return "needs Linux (this is " + runtime.GOOS + ")"
	}
	return "cannot run here (" + msg + ")"
}

// installHint says what to install for a backend to run here.
func installHint() string {
	build := "then build the commands' image once, in the repository's root: `" + docker.BuildDefaultImage + "`"
	switch runtime.GOOS {
	case "darwin":
		return "Install and start Docker Desktop (https://docs.docker.com/desktop/setup/install/mac-install/) or Colima (brew install colima docker && colima start); " + build + "."
	case "windows":
		return "Install and start Docker Desktop (https://docs.docker.com/desktop/setup/install/windows-install/); " + build + "."
	}
	return "Run the executor on Linux with user namespaces permitted (the local backend needs nothing installed; a container " +
		"or a locked-down kernel forbids them), or install and start a Docker Engine (Docker Desktop, or docker.io: " +
		"scripts/setup-docker.sh on Debian) and point DOCKER_HOST at it if it is not on the default socket; " + build + "."
}
