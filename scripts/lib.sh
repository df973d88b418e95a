# Sourced by the scripts. CACHE_DIR is where goalbox keeps what it installs or builds once (npm tools, the
# debootstrap tarball, the compose binary, jest): $GOALBOX_CACHE_DIR, else /var/cache/goalbox for root (CI and later
# sessions on the same machine find it) and ~/.cache/goalbox for anyone else. The benchmark grader and the
# filesystem benchmark read the same variable.
if [ "$(id -u)" = 0 ]; then
	CACHE_DIR=${GOALBOX_CACHE_DIR:-/var/cache/goalbox}
else
	CACHE_DIR=${GOALBOX_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/goalbox}
fi
export GOALBOX_CACHE_DIR=$CACHE_DIR
mkdir -p "$CACHE_DIR"

# start_servers REPO WORK FS_PORT EXEC_PORT builds both servers into WORK and starts them on loopback over WORK/ws,
# logging to WORK/*.log, and waits until both answer /healthz. Their pids go to SERVER_PIDS for the caller's trap.
# Each server generates its bearer token, as for a user, into WORK/*.token; they are then in FS_TOKEN and
# EXEC_TOKEN. SERVER_TOKEN=none (for a client that cannot send a header) starts both with -token none instead.
SERVER_PIDS=()
FS_TOKEN= EXEC_TOKEN=
start_servers() {
	local repo=$1 work=$2 fs_port=$3 exec_port=$4
	(cd "$repo" && go build -o "$work/fs" ./servers/filesystem && go build -o "$work/exec" ./servers/executor)
	mkdir -p "$work/ws"
	local fs_token=(-token-file "$work/fs.token") exec_token=(-token-file "$work/exec.token")
	if [ "${SERVER_TOKEN:-}" = none ]; then
		fs_token=(-token none) exec_token=(-token none)
	fi
	"$work/fs" -addr "127.0.0.1:$fs_port" -workspace "$work/ws" "${fs_token[@]}" 2>"$work/fs.log" &
	SERVER_PIDS+=($!)
	"$work/exec" -addr "127.0.0.1:$exec_port" -workspace "$work/ws" "${exec_token[@]}" 2>"$work/exec.log" &
	SERVER_PIDS+=($!)
	local port
	for port in "$fs_port" "$exec_port"; do
		for _ in $(seq 100); do
			curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && continue 2
			sleep 0.1
		done
		echo "the server on port $port did not become healthy:" >&2
		cat "$work/fs.log" "$work/exec.log" >&2
		return 1
	done
	if [ "${SERVER_TOKEN:-}" != none ]; then
		FS_TOKEN=$(cat "$work/fs.token") EXEC_TOKEN=$(cat "$work/exec.token")
	fi
}

# The client matrix's npm packages (tests/clients/package.json and package-lock.json: the MCP client libraries,
# ajv, and Node 22) and the MCP registry's server.json schema, installed by scripts/setup-clients.sh into a folder
# named after the lock file's hash, so that changing a pin installs anew and the old folder stays for older
# checkouts. clients_dir REPO prints it.
clients_dir() {
	echo "$CACHE_DIR/clients-$(sha256sum "$1/tests/clients/package-lock.json" | cut -c1-12)"
}

# agents_dir REPO prints where scripts/setup-agents.sh installs the coding-agent CLIs of tests/agents (keyed by
# their lock file, as clients_dir is); the tests find it the same way (tests/agents/agents_test.go).
agents_dir() {
	echo "$CACHE_DIR/agents-$(sha256sum "$1/tests/agents/package-lock.json" | cut -c1-12)"
}

# clients_ready REPO WHAT: 0 when the client packages are installed; else, with CI=true, says so and exits 1 (CI
# must run what needs them), and otherwise says what is skipped and how to install, and returns 1.
clients_ready() {
	local dir
	dir=$(clients_dir "$1")
	[ -f "$dir/.installed" ] && return 0
	if [ "${CI:-}" = true ]; then
		echo "$2: FAIL: the client packages are not installed in $dir; scripts/setup-clients.sh installs them" >&2
		exit 1
	fi
	echo "$2: skipped: the client packages are not installed; run scripts/setup-clients.sh (no root needed)"
	return 1
}

# clients_stage REPO DIR copies the matrix's .mjs files into DIR beside a node_modules link to the installed
# packages: Node resolves a file's imports from its own folder, and the checkout stays as it is.
clients_stage() {
	mkdir -p "$2"
	cp "$1"/tests/clients/*.mjs "$2/"
	ln -sfn "$(clients_dir "$1")/node_modules" "$2/node_modules"
}
