package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// DefaultImage is the image commands run in when none is configured: the executor's own image, which
// deploy/compose.yaml builds from deploy/Dockerfile.exec, with the toolchains the agent and the benchmark need
// (python3 + pytest, Go, Node.js + jest, g++ + cmake). It is never pulled: build it once (imageMissing says how).
const DefaultImage = "goalbox/executor:latest"

// BuildDefaultImage is the command that builds DefaultImage, run from the repository's root.
const BuildDefaultImage = "docker build -f deploy/Dockerfile.exec -t " + DefaultImage + " ."

// imageMissing is the start-up error for an image that is not on the engine, saying how to get it.
func imageMissing(image string) error {
	if image == DefaultImage {
		return fmt.Errorf("docker backend: image %s not found locally; it is the default image (the executor's, with "+
			"python3, Go, Node.js and g++), built from this repository: run `%s` in the repository's root once "+
			"(or `docker compose -f deploy/compose.yaml build executor`), or name another image with -image "+
			"(e.g. debian:bookworm-slim, after `docker pull debian:bookworm-slim`); images are never pulled", image, BuildDefaultImage)
	}
	return fmt.Errorf("docker backend: image %s not found locally; images are never pulled: `docker pull %s` or build it "+
		"(with no registry, as here: scripts/setup-docker.sh builds the base images locally)", image, image)
}

// EngineHost finds the Docker Engine the way the docker CLI does, so that whatever `docker ps` talks to, the
// backend talks to: DOCKER_HOST when set; else the endpoint of the current docker context (DOCKER_CONTEXT, or
// currentContext in $DOCKER_CONFIG/config.json, default ~/.docker) — Docker Desktop, Colima, OrbStack and Rancher
// Desktop each install one; else the platform's default socket, or Docker Desktop's per-user socket
// (~/.docker/run/docker.sock) when only that one exists. source says which, for the log and /healthz.
func EngineHost() (host, source string) {
	if h := os.Getenv(client.EnvOverrideHost); h != "" {
		return h, "DOCKER_HOST"
	}
	if h, name := contextHost(); h != "" {
		return h, "docker context " + name
	}
	if runtime.GOOS != "windows" && !exists(strings.TrimPrefix(client.DefaultDockerHost, "unix://")) {
		if home, err := os.UserHomeDir(); err == nil {
			if p := filepath.Join(home, ".docker", "run", "docker.sock"); exists(p) {
				return "unix://" + p, "Docker Desktop's socket"
			}
		}
	}
	return client.DefaultDockerHost, "the default socket"
}

// contextHost is the Docker endpoint of the current docker context, if one other than "default" is chosen.
func contextHost() (host, name string) {
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", ""
		}
		dir = filepath.Join(home, ".docker")
	}
	name = os.Getenv("DOCKER_CONTEXT")
	if name == "" {
		var cfg struct {
			CurrentContext string `json:"currentContext"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil && json.Unmarshal(b, &cfg) == nil {
			name = cfg.CurrentContext
		}
	}
	if name == "" || name == "default" {
		return "", ""
	}
	sum := sha256.Sum256([]byte(name))
	var meta struct {
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json"))
	if err != nil || json.Unmarshal(b, &meta) != nil {
		return "", ""
	}
	return meta.Endpoints["docker"].Host, name
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// newClient is a client of the engine at host (EngineHost when empty), with the rest of the environment's settings
// (DOCKER_API_VERSION, DOCKER_CERT_PATH, DOCKER_TLS_VERIFY). API-version negotiation is on by default in
// moby/client v0.6 (WithAPIVersionNegotiation is a deprecated no-op): the client talks the daemon's version, 1.41
// for Debian's Docker 20.10.
func newClient(host string) (*client.Client, error) {
	if host == "" {
		host, _ = EngineHost()
	}
	return client.New(client.FromEnv, client.WithHost(host))
}

// Engine is what Ping learnt of a Docker Engine that answered.
type Engine struct {
	Host       string // where it answered, e.g. unix:///var/run/docker.sock
	Source     string // how Host was found (EngineHost)
	APIVersion string // the engine's API version
}

// Ping asks the engine at host (EngineHost when empty) whether it answers, within timeout.
func Ping(ctx context.Context, host string, timeout time.Duration) (Engine, error) {
	e := Engine{Host: host, Source: "configured"}
	if host == "" {
		e.Host, e.Source = EngineHost()
	}
	cli, err := newClient(e.Host)
	if err != nil {
		return e, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		return e, err
	}
	e.APIVersion = p.APIVersion
	return e, nil
}
