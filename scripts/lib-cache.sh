# Sourced by the scripts: where goalbox keeps what it installs (npm tools, base image tarballs, built plugins).
# Root uses /var/cache/goalbox so CI and later sessions on the same machine find it; others their own cache.
if [ -z "${GOALBOX_CACHE:-}" ]; then
  if [ "$(id -u)" = 0 ]; then GOALBOX_CACHE=/var/cache/goalbox; else GOALBOX_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/goalbox"; fi
fi
export GOALBOX_CACHE
mkdir -p "$GOALBOX_CACHE"
