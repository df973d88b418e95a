// Package safedir reaches a folder on the host without following a symlink another user could have planted.
//
// A server that makes and uses folders of its own (a token file's folder, a backend's state and caches) under a
// path it did not choose alone ($HOME after sudo -E is the user's) must not be led by a planted symlink into
// creating, chowning or writing whatever the symlink names: run as root, pointed at /etc, that is root's. MkdirAll
// walks the path one component at a time from "/", each opened with openat(O_NOFOLLOW) from the one before, and
// checks each on the open descriptor, so that what it checked is what it uses, whatever the names point to later.
//
// Only Unix has the walk; on other systems the callers keep their folders in the user's own profile, whose ACL
// already keeps other users out.
package safedir
