//go:build !linux

package docker

import (
	"errors"
	"net"
)

func listenInNetns(int) (net.Listener, error) {
	return nil, errors.New("the Docker host is not this machine's Linux kernel")
}
