package egress

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// quiet is how long pl's connection has moved no byte either way, as its socket's kernel counts (TCP_INFO): bytes
// move kernel to kernel through a tunnel (splice), past anything the proxy would count. The time since it was
// admitted when the kernel cannot say.
func (pl *place) quiet() time.Duration {
	fallback := time.Since(pl.since)
	sc, ok := pl.c.Conn.(syscall.Conn)
	if !ok {
		return fallback
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return fallback
	}
	var info *unix.TCPInfo
	if rc.Control(func(fd uintptr) { info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }) != nil || err != nil {
		return fallback
	}
	return min(time.Duration(info.Last_data_sent), time.Duration(info.Last_data_recv), fallback/time.Millisecond) * time.Millisecond
}
