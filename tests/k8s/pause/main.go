//go:build linux

// Command pause is the sandbox ("pause") container of each Pod on the test node scripts/k8s-node.sh starts: it holds
// the Pod's namespaces open and does nothing else. No registry is reachable here, so the runtime cannot pull the
// usual one; this one is built into a local image (goalbox/pause:local) and loaded into containerd.
//
// It is process 1 of the Pod's PID namespace when the Pod shares one: it reaps the orphans that end up with it, and
// it ends on SIGINT or SIGTERM, which the runtime sends when the Pod stops.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	child := make(chan os.Signal, 1)
	signal.Notify(child, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			os.Exit(0)
		case <-child:
			// Reap every child that has ended; more than one may have for one signal.
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
