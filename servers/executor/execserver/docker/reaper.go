package docker

// The watchdog: Run kills a container at its command's timeout, but a server that is SIGKILLed (or loses the Engine)
// kills nothing, and anything inside the container is in the command's reach (a timeout(1) there was stopped with
// `kill -STOP $PPID`). So each backend starts a reaper: a small process of its own, on the host, out of every
// container's PID namespace, that knows each command container's deadline (its timeout plus watchdogGrace) and
// force-removes the container at that deadline, whatever became of the server. The server tells it of each container
// on a pipe ("add ID DEADLINE", "del ID" once removed); when the pipe ends (the server exited, however), the reaper
// stays until the last deadline it knows has passed and its container is gone, then exits. The reaper is the
// server's own binary started again with reaperEnv set (init below takes over before main runs), so it needs nothing
// the server does not have; it ignores SIGINT and SIGHUP and runs in a process group of its own, so a Ctrl-C or a
// closed terminal that ends the server leaves it to finish its work.
//
// The network holder and waiting pool containers need no reaper: they end when the server's attachment does
// (network.go).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// watchdogGrace is how long after its timeout the reaper removes a command's container (Run's own kill normally
// comes first).
const watchdogGrace = 10 * time.Second

// goneCheck is how often a reaper whose server is gone looks whether its containers still exist.
const goneCheck = 10 * time.Second

// reaperEnv, set to the Engine's address, makes this binary a reaper instead of whatever it is.
const reaperEnv = "GOALBOX_DOCKER_REAPER"

func init() {
	if host := os.Getenv(reaperEnv); host != "" {
		signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
		os.Exit(runReaper(os.Stdin, host))
	}
}

// runReaper is the reaper process: it reads the server's lines from in and removes each container still known at
// its deadline; once in ends, it exits when it knows of no container any more.
func runReaper(in io.Reader, host string) int {
	cli, err := newClient(host)
	if err != nil {
		return 1 // the server sees the pipe break at its next line and says so
	}
	type line struct {
		del      bool
		id       string
		deadline time.Time
		layer    string // the container's layer folder (layer_linux.go), "" without one
	}
	lines := make(chan line)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			// The layer's folder is the rest of the line: a state folder's path may hold spaces.
			f := strings.SplitN(sc.Text(), " ", 4)
			switch {
			case len(f) >= 3 && f[0] == "add":
				if ns, err := strconv.ParseInt(f[2], 10, 64); err == nil {
					l := line{id: f[1], deadline: time.Unix(0, ns)}
					if len(f) == 4 {
						l.layer = f[3]
					}
					lines <- l
				}
			case len(f) == 2 && f[0] == "del":
				lines <- line{del: true, id: f[1]}
			}
		}
	}()
	type known struct {
		deadline time.Time
		layer    string
	}
	live := map[string]known{}
	// gone forgets a container that is removed; once the server is gone, nobody else unmounts its layer.
	gone := func(id string, serverGone bool) {
		if k := live[id]; serverGone && k.layer != "" {
			_ = removeLayerDir(k.layer)
		}
		delete(live, id)
	}
	serverGone := false
	timer := time.NewTimer(time.Hour)
	for !serverGone || len(live) > 0 {
		next := time.Now().Add(time.Hour)
		for _, k := range live {
			if k.deadline.Before(next) {
				next = k.deadline
			}
		}
		if serverGone && time.Until(next) > goneCheck {
			// Nobody tells it of removals any more: it looks for itself, so that it does not wait an hour for a
			// process the next executor of the instance removed at its start.
			next = time.Now().Add(goneCheck)
		}
		timer.Reset(time.Until(next))
		select {
		case l, ok := <-lines:
			switch {
			case !ok:
				serverGone, lines = true, nil
			case l.del:
				delete(live, l.id)
			default:
				live[l.id] = known{deadline: l.deadline, layer: l.layer}
			}
		case <-timer.C:
			for id, k := range live {
				if time.Now().Before(k.deadline) {
					if serverGone {
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); cerrdefs.IsNotFound(err) {
							gone(id, serverGone)
						}
						cancel()
					}
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
				cancel()
				if err == nil || cerrdefs.IsNotFound(err) {
					gone(id, serverGone)
				} else {
					k.deadline = time.Now().Add(5 * time.Second) // the Engine is away: try again
					live[id] = k
				}
			}
		}
	}
	return 0
}

// reaper is the server's side: the reaper process and the containers it was told of.
type reaper struct {
	host string
	log  *slog.Logger
	mu   sync.Mutex
	in   io.WriteCloser // nil once closed
	proc *exec.Cmd
	live map[string]reaped
}

// reaped is a container the reaper was told of: its deadline, and its layer's folder ("" without one), which the
// reaper unmounts once it removed the container of a server that is gone.
type reaped struct {
	deadline time.Time
	layer    string
}

func (k reaped) line(id string) string {
	if k.layer == "" {
		return fmt.Sprintf("add %s %d\n", id, k.deadline.UnixNano())
	}
	return fmt.Sprintf("add %s %d %s\n", id, k.deadline.UnixNano(), k.layer)
}

// startReaper starts the backend's reaper process.
func (b *dockerBackend) startReaper() error {
	r := &reaper{host: b.cli.DaemonHost(), log: b.log, live: map[string]reaped{}}
	if err := r.spawn(); err != nil {
		return fmt.Errorf("docker backend: start the watchdog (the reaper process): %w", err)
	}
	b.reaper = r
	return nil
}

// spawn starts a reaper process and tells it of every container known; under mu, or before r is shared.
func (r *reaper) spawn() error {
	exe := "/proc/self/exe" // the running binary even if its file was replaced or removed (go run)
	if runtime.GOOS != "linux" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), reaperEnv+"="+r.host)
	// No stdout or stderr: a reaper that outlives the server must not hold the server's output pipes open (a
	// parent reading them to EOF would wait for the last deadline).
	cmd.Stdout, cmd.Stderr = nil, nil
	detach(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // collects it when it exits
	r.in, r.proc = in, cmd
	for id, k := range r.live {
		_, _ = io.WriteString(in, k.line(id))
	}
	return nil
}

// send writes a line to the reaper, starting a new one (told of every container) if the old one is gone.
func (r *reaper) send(line string) {
	if r.in == nil {
		return
	}
	if _, err := io.WriteString(r.in, line); err == nil {
		return
	}
	r.log.Error("docker backend: the watchdog (reaper process) was gone; starting another")
	r.in.Close()
	if err := r.spawn(); err != nil {
		r.in = nil
		r.log.Error("docker backend: no watchdog: a container outlives its deadline if the server dies", "err", err)
	}
}

// add tells the reaper to remove container id at deadline, and, should the server be gone by then, to unmount its
// layer (its folder; "" without one).
func (r *reaper) add(id string, deadline time.Time, layer string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := reaped{deadline: deadline, layer: layer}
	r.live[id] = k
	r.send(k.line(id))
}

// del tells the reaper that container id is gone.
func (r *reaper) del(id string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.live[id]; !ok {
		return
	}
	delete(r.live, id)
	r.send("del " + id + "\n")
}

// close ends the pipe: the reaper exits once the containers it still knows of are past their deadlines (none,
// after a clean Close).
func (r *reaper) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.in != nil {
		r.in.Close()
		r.in = nil
	}
}
