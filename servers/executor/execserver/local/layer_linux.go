package local

// Each command's own layer (package layer; the workspace guard, package wsguard): in the namespace mode a command
// never writes the workspace. The holder makes the layer (layer.Make), because only it has the capabilities in the
// sandbox's user namespace, and sends its descriptors to the server over a socket of their own (SCM_RIGHTS); the
// keeper attaches the mounts in its own mount namespace (keeper_linux.go, step stepAttach) before PID 1 is forked.
// This file is the holder's side of that socket, the server's request, and the mounts of the minimal root a layer
// would cover (the keeps).

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/layer"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/rootfs"
	"golang.org/x/sys/unix"
)

// holderLayerEnv tells the holder the descriptor of its layer socket.
const holderLayerEnv = "GOALBOX_HOLDER_LAYER"

// layer asks the holder for a layer of the workspace and the private folders, bounded together by bytes and inodes.
func (h *holder) layer(workspace string, private []string, bytes, inodes int64) (*layer.Layer, error) {
	req, err := json.Marshal(layer.Request{Workspace: workspace, Private: private, Bytes: bytes, Inodes: inodes})
	if err != nil {
		return nil, err
	}
	want := layer.Descriptors(len(private))
	buf, fds, err := h.layers.call("layers", req, nil, want)
	if err != nil {
		return nil, err
	}
	var rep layer.Reply
	if err := json.Unmarshal(buf, &rep); err != nil || rep.Error != "" || len(fds) != want {
		for _, f := range fds {
			unix.Close(f)
		}
		if err == nil && rep.Error == "" {
			err = fmt.Errorf("the namespace holder sent %d descriptors for a layer", len(fds))
		} else if rep.Error != "" {
			err = errors.New(rep.Error)
		}
		return nil, fmt.Errorf("the command's layer: %w", err)
	}
	return layer.Open(fds), nil
}

// serveLayers runs in the holder: one layer per request, until the socket closes.
func serveLayers() {
	serveHolderConn(holderLayerEnv, 0, func(buf []byte, _ []int) ([]byte, []int) {
		var req layer.Request
		fds, err := []int(nil), json.Unmarshal(buf, &req)
		if err == nil {
			fds, err = layer.Make(req)
		}
		rep := layer.Reply{}
		if err != nil {
			rep.Error = err.Error()
		}
		b, _ := json.Marshal(rep)
		return b, fds
	})
}

// layerKeeps are the plan's mounts that lie below one of the layer's mount points without being one, outermost
// only (a mount below another is carried along with it): the layer's mount would hide them. Only a layout with
// something of the host bound under /tmp (a cache folder, a read folder there) has any.
func layerKeeps(p *commandPolicy, plan *rootfs.Plan) []string {
	at := layer.AttachPoints(p.Dir, p.PrivateLayers)
	var keeps []string
	for _, op := range plan.Ops {
		if (op.Kind != "bind" && op.Kind != "tmpfs" && op.Kind != "devpts") || slices.Contains(at, op.Target) {
			continue
		}
		below := slices.ContainsFunc(at, func(a string) bool { return op.Target != a && rootfs.Within(op.Target, a) })
		if below && !slices.ContainsFunc(keeps, func(k string) bool { return rootfs.Within(op.Target, k) }) {
			keeps = append(keeps, op.Target)
		}
	}
	return keeps
}

// layerKeepOps are the plan's steps that make the places the keeper parks keeps in: a folder for a folder, a file
// for a file.
func layerKeepOps(keeps []string, plan *rootfs.Plan) []rootfs.Op {
	var ops []rootfs.Op
	for i, k := range keeps {
		kind := "dir"
		for _, op := range plan.Ops {
			if op.Target == k && op.Kind == "bind" && !isDir(op.Source) {
				kind = "file"
			}
		}
		ops = append(ops, rootfs.Op{Kind: kind, Target: layer.KeepAt(i)})
	}
	return ops
}
