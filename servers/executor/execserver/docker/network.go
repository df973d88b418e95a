package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Every command container of a backend joins the network namespace of one network holder (NetworkMode
// "container:<holder>"), a container with network "none" that does nothing. So all commands and processes of one
// executor share one loopback, as the local backend's commands do: a server started as a process answers
// 127.0.0.1 from a later command. The namespace has only `lo`: nothing outside the executor reaches it, and it
// reaches nothing outside. Joining one process's container instead would tie the loopback to that process's life.
//
// The holder is labelled like the command containers (role "network"), so a crashed server's holder is removed
// with its other leftovers; Close removes it. Should it die (the Engine restarted, someone removed it), the next
// container start finds out and a new holder is started: commands after that share a new loopback, which processes
// started before do not see.

// Values of labelRole.
const (
	roleCommand = "command"
	roleNetwork = "network"
)

// The holder waits for a line on a standard input nobody ever writes to: it needs nothing but sh and read, which
// every image the backend runs has. The server stays attached to that standard input for the holder's life, and
// with StdinOnce the holder's stdin closes when that attachment ends: when the server exits, however it exits
// (SIGKILL included), read sees EOF and the holder ends. So no holder outlives its executor, as no waiting pool
// container does (its launcher waits on its attached stdin the same way) and no command outlives its deadline
// (the reaper, reaper.go).
const networkHolderCommand = "read -r _"

// Limits of the holder: an idle sh needs little, but starting it needs more. While a container starts, runc's init
// (a Go program) runs its threads in the container's pids cgroup, and each thread counts: at 4 pids a start on a
// busy machine failed now and then ("cannot start a stopped process", "container process is already dead"; the
// kernel logged "fork rejected by pids controller" in the holder's cgroup). 32 leaves runc room; the sh that
// remains is one process.
const (
	networkHolderMemory = 16 << 20
	networkHolderPIDs   = 32
)

// networkHolder is the container whose network namespace the command containers join.
type networkHolder struct {
	mu  sync.Mutex
	id  string // "" once removed by Close
	att *client.ContainerAttachResult
}

// current is the ID of the holder command containers join now.
func (h *networkHolder) current() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.id
}

// startNetwork creates and starts a network holder and makes it the current one.
func (b *dockerBackend) startNetwork(ctx context.Context) error {
	id, att, err := b.createNetworkHolder(ctx)
	if err != nil {
		return err
	}
	b.net.mu.Lock()
	b.net.id, b.net.att = id, att
	b.net.mu.Unlock()
	return nil
}

func (b *dockerBackend) createNetworkHolder(ctx context.Context) (string, *client.ContainerAttachResult, error) {
	var r [6]byte
	_, _ = rand.Read(r[:])
	pids := int64(networkHolderPIDs)
	created, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: b.namePref + "network-" + hex.EncodeToString(r[:]),
		Config: &container.Config{
			Image:      b.cfg.Image,
			Entrypoint: []string{"sh", "-c", networkHolderCommand},
			Cmd:        []string{},
			User:       fmt.Sprintf("%d:%d", b.uid, b.gid),
			Labels:     b.netLabels,
			// The command containers take their host name from the container whose network they join.
			Hostname:    "sandbox",
			OpenStdin:   true,
			AttachStdin: true,
			StdinOnce:   true,
			Healthcheck: noHealthcheck,
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    "none",
			ReadonlyRootfs: true,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    b.securityOpt(),
			LogConfig:      container.LogConfig{Type: "none"},
			Resources: container.Resources{
				CgroupParent: b.cgroupParent, // the totals, enforced by the kernel over all containers (cgroup_linux.go)
				Memory:       networkHolderMemory,
				MemorySwap:   networkHolderMemory,
				PidsLimit:    &pids,
			},
		},
	})
	if err != nil {
		return "", nil, fmt.Errorf("docker backend: create the network holder: %w", err)
	}
	// The attachment lives as long as the server's connection to the Engine: a context of its own, never cancelled.
	att, err := b.cli.ContainerAttach(context.WithoutCancel(ctx), created.ID, client.ContainerAttachOptions{Stream: true, Stdin: true})
	if err != nil {
		b.removeContainer(created.ID)
		return "", nil, fmt.Errorf("docker backend: attach to the network holder: %w", err)
	}
	if _, err := b.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		att.Close()
		b.removeContainer(created.ID)
		return "", nil, fmt.Errorf("docker backend: start the network holder: %w", err)
	}
	return created.ID, &att, nil
}

// renewNetwork is called when a container joined to holder stale could not start. If stale is still current and
// no longer running, a new holder replaces it. It returns the holder to join now; when that is stale, the failure
// had another cause.
func (b *dockerBackend) renewNetwork(ctx context.Context, stale string) (string, error) {
	b.net.mu.Lock()
	defer b.net.mu.Unlock()
	if b.net.id != stale || b.net.id == "" {
		return b.net.id, nil // renewed by another call meanwhile, or closed
	}
	insp, err := b.cli.ContainerInspect(ctx, stale, client.ContainerInspectOptions{})
	if err == nil && insp.Container.State != nil && insp.Container.State.Running {
		return stale, nil
	}
	if err != nil && !cerrdefs.IsNotFound(err) {
		return stale, fmt.Errorf("docker backend: inspect the network holder: %w", err)
	}
	b.removeContainer(stale)
	if b.net.att != nil {
		b.net.att.Close()
		b.net.att = nil
	}
	id, att, err := b.createNetworkHolder(ctx)
	if err != nil {
		return stale, err
	}
	b.net.att = att
	b.log.Warn("docker backend: the network holder was gone; started a new one (processes started before it "+
		"no longer share a loopback with new commands)", "old", stale[:12], "new", id[:12])
	if err := b.egressAttach(ctx, id); err != nil {
		b.log.Error("docker backend: no egress listener in the new network holder: its commands have no way out", "err", err)
	}
	b.net.id = id
	return id, nil
}

// closeNetwork removes the holder. Containers still joined to it keep the namespace until they end.
func (b *dockerBackend) closeNetwork() {
	b.net.mu.Lock()
	id, att := b.net.id, b.net.att
	b.net.id, b.net.att = "", nil
	b.net.mu.Unlock()
	if id != "" {
		b.removeContainer(id)
	}
	if att != nil {
		att.Close()
	}
}

// removeContainer force-removes a container with a fresh context (the caller's may be cancelled already) and
// says whether it is gone; a failure is logged, and the next start removes it by label.
func (b *dockerBackend) removeContainer(id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
		b.log.Error("docker backend: remove container failed", "container", id[:12], "err", err)
		return false
	}
	return true
}
