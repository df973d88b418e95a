// Package rootfs is the local backend's minimal root in the namespace mode: an empty tmpfs with only the policy's
// paths bound into it, planned by the server from what it can see (New) and built by the namespace holder in its
// own mount namespace (Open, Build), which every command's namespace is copied from.
package rootfs
