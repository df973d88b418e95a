package backend

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseRunAs accepts "uid" or "uid:gid", numeric only: a name would say nothing about who owns files on the host
// (and in a container it would be looked up in the image). Root's uid and gid are refused: no backend runs a command
// as either. Both backends parse their user setting with it (-run-as, -docker-user).
func ParseRunAs(s string) (uid, gid int, err error) {
	us, gs, hasGID := strings.Cut(s, ":")
	uid, err = strconv.Atoi(us)
	if err == nil && hasGID {
		gid, err = strconv.Atoi(gs)
	} else {
		gid = uid
	}
	if err != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("user %q is not a numeric uid or uid:gid", s)
	}
	if uid == 0 || gid == 0 {
		return 0, 0, fmt.Errorf("user %q is root; commands run as an unprivileged uid:gid", s)
	}
	return uid, gid, nil
}
