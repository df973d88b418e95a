package local

// DefaultRunAsUID is the uid (and gid) local commands run as when the server is root and root owns the workspace:
// the "nonroot" id of distroless images, which no Debian or Ubuntu host gives to anyone.
const DefaultRunAsUID = 65532
