//go:build linux

package docker

import (
	"fmt"
	"net"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/netns"
)

// listenInNetns opens a TCP listener on 127.0.0.1 (a free port) in the network namespace of process pid.
func listenInNetns(pid int) (net.Listener, error) {
	return netns.Listen(fmt.Sprintf("/proc/%d/ns/net", pid), "127.0.0.1:0")
}
