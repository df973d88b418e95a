//go:build linux

package sandboxtest

// Isolation attacks: one per way out that an outsider found on the local backend when commands ran as root with
// only capabilities dropped (host keyring, raw block devices, other processes' command lines, writing into
// another command's output, setuid files, homes shared between workspaces, inherited descriptors, the x32 ABI).
//
// Each attack has a positive control: the same command run directly on the host (or the same mechanism used
// where it is allowed) must succeed, so a failed attack in the sandbox means the sandbox stopped it, not that the
// attack was broken. They join the containment table (containmentAttacks), so every backend and mode that runs the
// table runs them; TestLocalContainmentAsOrdinaryUser runs the table again with the server as an ordinary user.

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"golang.org/x/sys/unix"
)

// hostRun runs command with sh -c on the host, as the test process: the positive control of an attack.
func hostRun(t *testing.T, dir, command string, extra ...*os.File) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.ExtraFiles = extra
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// keyringCommand searches the user, session and user-session keyrings for a key and prints its payload, then
// plants a key in the user and session keyrings. python3's ctypes makes the raw system calls.
func keyringCommand(desc, planted string) string {
	return fmt.Sprintf(`python3 - <<'EOF' 2>&1
import ctypes, platform
nr = {'x86_64': (250, 248), 'aarch64': (219, 217)}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for ring in (-4, -3, -5):
    kid = libc.syscall(nr[0], 10, ctypes.c_long(ring), b"user", b"%s", ctypes.c_long(0))
    if kid > 0:
        buf = ctypes.create_string_buffer(256)
        n = libc.syscall(nr[0], 11, ctypes.c_long(kid), buf, ctypes.c_long(256))
        print("READ", buf.raw[:max(n, 0)].decode(errors="replace"))
    else:
        print("search", ring, "errno", ctypes.get_errno())
for ring in (-4, -3):
    print("add", ring, libc.syscall(nr[1], b"user", b"%s", b"x", ctypes.c_long(1), ctypes.c_long(ring)), ctypes.get_errno())
EOF`, desc, planted)
}

// isolationAttacks are those attacks, as rows of the containment table.
func isolationAttacks(e *containmentEnv, target Target) []attack {
	t := e.t
	n := e.nonce
	var attacks []attack

	// Host keyring: a key of the test process's user keyring must not be readable, and a key a command adds must
	// not appear in it.
	keyDesc, planted, payload := "goalbox-key-"+n, "goalbox-planted-"+n, "keysecret-"+n
	if _, err := unix.AddKey("user", keyDesc, []byte(payload), unix.KEY_SPEC_USER_KEYRING); err == nil {
		if _, err := exec.LookPath("python3"); err == nil {
			// Found is the leak (a root host also reads the payload; an ordinary user may only find its key).
			if out := hostRun(t, t.TempDir(), keyringCommand(keyDesc, "goalbox-control-"+n)); !strings.Contains(out, "READ") {
				t.Errorf("positive control: the keyring attack does not find the key on the host: %s", out)
			}
		}
		attacks = append(attacks, attack{name: "keyring", command: keyringCommand(keyDesc, planted), python: true,
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if strings.Contains(out.Stdout+out.Stderr, payload) || strings.Contains(out.Stdout, "READ") {
					e.t.Errorf("the command found the host's key: %s", Clip(out.Stdout))
				}
				for _, ring := range []int{unix.KEY_SPEC_USER_KEYRING, unix.KEY_SPEC_SESSION_KEYRING} {
					if id, err := unix.KeyctlSearch(ring, "user", planted, 0); err == nil {
						e.t.Errorf("a key the command added is in the host's keyring %d (id %d)", ring, id)
					}
				}
			}})
	} else {
		t.Logf("no kernel keyring here (%v): keyring attack skipped", err)
	}

	// Raw block devices, the console and other terminals.
	if os.Geteuid() == 0 {
		if dev, magic, ok := loopDevice(t, n); ok {
			attacks = append(attacks, attack{name: "block_device", command: fmt.Sprintf("head -c 64 %[1]s 2>&1; dd if=%[1]s bs=64 count=1 2>&1 | head -c 200; true", dev),
				check: mustNotSayCheck(magic)})
		}
	}
	deviceCmd := `: < /dev/console && echo OPENED-console; : > /dev/tty1 && echo OPENED-tty1; : < /dev/kmsg && echo OPENED-kmsg; : < /dev/mem && echo OPENED-mem; true`
	if os.Geteuid() == 0 {
		if out := hostRun(t, "/", deviceCmd); !strings.Contains(out, "OPENED-console") {
			t.Logf("positive control: the host cannot open /dev/console either: %q", out)
		}
	}
	attacks = append(attacks,
		attack{name: "devices_other_than_allowed", command: deviceCmd, check: mustNotSayCheck("OPENED-")},
		attack{name: "devices_allowed", command: `head -c 4 /dev/urandom | wc -c; echo x > /dev/null && echo NULL-OK; head -c 3 /dev/zero | wc -c; ls /dev > /dev/null && echo LS-OK`,
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if out.Stdout != "4\nNULL-OK\n3\nLS-OK\n" {
					e.t.Errorf("allowed devices: %q %q", out.Stdout, out.Stderr)
				}
			}})

	// Other processes' command lines and the server's /proc files.
	// A nonce of its own: the containment table counts processes carrying e.nonce as survivors.
	tokNonce := RandomHex(8)
	token := "goalbox-token-" + tokNonce
	host := exec.Command("sh", "-c", "sleep 600; true", token)
	if err := host.Start(); err == nil {
		t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
		if !processWithArg(token) {
			t.Errorf("positive control: the host does not see its own process with %s", token)
		}
		name := filepath.Base(os.Args[0])
		attacks = append(attacks, attack{name: "proc_other_processes",
			command: fmt.Sprintf(`t=goalbox-tok; grep -a -l "${t}en-%[1]s" /proc/[0-9]*/cmdline 2>/dev/null; echo VISIBLE=$(ls -d /proc/[0-9]* | wc -l); cat /proc/%[2]d/status /proc/%[2]d/cmdline 2>/dev/null | head -c 300; true`, tokNonce, os.Getpid()),
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if strings.Contains(out.Stdout, "/cmdline") {
					e.t.Errorf("the command found a host process's command line: %s", Clip(out.Stdout))
				}
				if len(name) > 15 {
					name = name[:15]
				}
				if strings.Contains(out.Stdout, name) {
					e.t.Errorf("the command read the server's /proc files: %s", Clip(out.Stdout))
				}
				if m := regexp.MustCompile(`VISIBLE=(\d+)`).FindStringSubmatch(out.Stdout); m == nil {
					e.t.Errorf("no count of visible processes: %q", out.Stdout)
				} else if v, _ := strconv.Atoi(m[1]); v > 8 {
					e.t.Errorf("the command sees %d processes in /proc, not only its own", v)
				}
			}})
	}

	// setuid and setgid files: none may be made, and one placed by root must give nothing.
	suidCmd := fmt.Sprintf(`cp /bin/sh suid-%[1]s; chmod 4755 suid-%[1]s; chmod 2755 suid-%[1]s; chmod u+s,g+s suid-%[1]s;
python3 -c "import os; os.close(os.open('suid2-%[1]s', os.O_CREAT|os.O_WRONLY, 0o6755))" 2>&1; install -m 4755 /bin/true suid3-%[1]s 2>&1; true`, n)
	if ctl := t.TempDir(); true {
		_ = hostRun(t, ctl, suidCmd)
		if fi, err := os.Stat(filepath.Join(ctl, "suid-"+n)); err != nil || fi.Mode()&fs.ModeSetuid == 0 {
			t.Errorf("positive control: the setuid attack does not make a setuid file on the host: %v", err)
		}
	}
	attacks = append(attacks, attack{name: "setuid_files", command: suidCmd,
		check: func(e *containmentEnv, out protocol.RunCommandOutput) {
			_ = filepath.WalkDir(e.ws, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if fi, err := d.Info(); err == nil && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
					e.t.Errorf("the command left a setuid/setgid file: %s %v", p, fi.Mode())
				}
				return nil
			})
		}})
	if os.Geteuid() == 0 {
		if suid, ok := rootSetuidCopy(t, e.ws, "/bin/cp", "suidcp-"+n); ok {
			attacks = append(attacks, attack{name: "setuid_root_binary", command: fmt.Sprintf("./%s /etc/hostname made-%s 2>&1; true", filepath.Base(suid), n),
				check: func(e *containmentEnv, out protocol.RunCommandOutput) {
					if owner, ok := fileOwner(filepath.Join(e.ws, "made-"+n)); ok && owner == 0 {
						e.t.Errorf("a setuid-root program gave the command root: it made a file owned by root")
					}
				}})
		}
	}

	// No command runs as root (uid or gid 0) on the host.
	attacks = append(attacks, attack{name: "runs_unprivileged", command: fmt.Sprintf("touch owned-%[1]s; mkdir owned-dir-%[1]s", n),
		check: func(e *containmentEnv, out protocol.RunCommandOutput) {
			for _, p := range []string{"owned-" + n, "owned-dir-" + n} {
				fi, err := os.Lstat(filepath.Join(e.ws, p))
				if err != nil {
					e.t.Errorf("%s: %v", p, err)
					continue
				}
				st := fi.Sys().(*syscall.Stat_t)
				if st.Uid == 0 || st.Gid == 0 {
					e.t.Errorf("%s was made by uid %d gid %d on the host: commands must never be root", p, st.Uid, st.Gid)
				}
			}
		}})

	// Inherited descriptors: one the server holds without close-on-exec (opened after the backend started, the
	// worst case) must not reach the command, and the command starts with 0, 1 and 2 only.
	secretFile := filepath.Join(t.TempDir(), "fd-secret")
	fdSecret := "fdsecret-" + n
	if err := os.WriteFile(secretFile, []byte(fdSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(secretFile, unix.O_RDONLY, 0) // deliberately without O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	// bash: dash takes only one-digit descriptors in a redirection.
	if out := hostRun(t, "/", fmt.Sprintf("bash -c 'cat <&%d'", fd)); !strings.Contains(out, fdSecret) {
		t.Errorf("positive control: a child of the test process does not inherit descriptor %d: %q", fd, out)
	}
	attacks = append(attacks, attack{name: "inherited_descriptors",
		// ls, started by the command, lists what it inherited plus the one descriptor it opens to list them (the
		// lowest free one, 3, when it inherited nothing else). The shell keeps close-on-exec copies of its own,
		// which no program gets, so the shell's own list would say nothing.
		command: fmt.Sprintf(`ls /proc/self/fd > fds-%[1]s.txt; echo FDS=$(sort -n fds-%[1]s.txt | tr '\n' ' '); for f in 3 4 5 6 7 8 9; do cat <&$f; done 2>/dev/null; command -v bash >/dev/null && bash -c 'for f in $(seq 10 40) %[2]d; do cat <&$f; done' 2>/dev/null; true`, n, fd),
		check: func(e *containmentEnv, out protocol.RunCommandOutput) {
			if strings.Contains(out.Stdout, fdSecret) {
				e.t.Errorf("the command read a descriptor the server holds")
			}
			if !strings.Contains(out.Stdout, "FDS=0 1 2 3\n") {
				e.t.Errorf("the command's shell has descriptors beyond 0, 1 and 2: %q", Clip(out.Stdout))
			}
		}})

	// The x32 system call ABI must not get past the filter (x86-64 only).
	if runtime.GOARCH == "amd64" {
		x32Cmd := `python3 -c "import ctypes; l=ctypes.CDLL(None, use_errno=True); r=l.syscall(0x40000000|39); print('X32', r, ctypes.get_errno())" 2>&1`
		if out := hostRun(t, "/", x32Cmd); strings.Contains(out, "X32 -1 1\n") {
			t.Errorf("positive control: x32 getpid is refused with EPERM on the host too: %q", out)
		}
		attacks = append(attacks, attack{name: "x32_syscalls", command: x32Cmd, python: true,
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if !strings.Contains(out.Stdout, "X32 -1 1\n") {
					e.t.Errorf("an x32 system call was not refused by the filter (EPERM): %q", out.Stdout)
				}
			}})
	}
	// The host's pseudo-terminals: a terminal the server's user has open (a user-started executor's own shell)
	// must not be openable, or a command writes into it; a terminal of its own still works.
	if ptm, name, err := openHostPty(); err != nil {
		t.Logf("positive control: the host cannot open a pseudo-terminal (%v); the host-terminal attack is skipped", err)
	} else {
		t.Cleanup(func() { ptm.Close() })
		if f, err := os.OpenFile(name, os.O_RDWR, 0); err != nil {
			t.Errorf("positive control: the host cannot open its own terminal %s: %v", name, err)
		} else {
			f.Close()
		}
		ptyCmd := fmt.Sprintf(`(exec 3<>%s) 2>/dev/null && echo HOST-PTY-OPENED; python3 -c "import pty; m, s = pty.openpty(); print('OWN-PTY')" 2>&1; true`, name)
		attacks = append(attacks, attack{name: "host_terminal", command: ptyCmd, python: true,
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if strings.Contains(out.Stdout, "HOST-PTY-OPENED") {
					e.t.Errorf("the command opened the host's terminal %s", name)
				}
				if !strings.Contains(out.Stdout, "OWN-PTY") {
					e.t.Errorf("a pseudo-terminal of the command's own does not work: %q", Clip(out.Stdout))
				}
			}})
	}
	// AF_VSOCK is not namespaced: on a VM a vsock socket reaches the hypervisor from any network namespace.
	vsockCmd := `python3 -c "import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print('VSOCK-MADE')" 2>&1; true`
	if out := hostRun(t, "/", vsockCmd); !strings.Contains(out, "VSOCK-MADE") {
		t.Logf("positive control: the host cannot make a vsock socket either (%q); the vsock attack is skipped", Clip(out))
	} else {
		attacks = append(attacks, attack{name: "vsock_socket", command: vsockCmd, python: true,
			check: func(e *containmentEnv, out protocol.RunCommandOutput) {
				if strings.Contains(out.Stdout, "VSOCK-MADE") {
					e.t.Errorf("the command made an AF_VSOCK socket: %q", out.Stdout)
				}
			}})
	}
	return attacks
}

func mustNotSayCheck(words ...string) func(*containmentEnv, protocol.RunCommandOutput) {
	return func(e *containmentEnv, out protocol.RunCommandOutput) {
		for _, w := range words {
			if strings.Contains(out.Stdout+out.Stderr, w) {
				e.t.Errorf("output shows %q: stdout %q stderr %q", w, Clip(out.Stdout), Clip(out.Stderr))
			}
		}
	}
}

// loopDevice makes a loop device over a file that starts with a marker, and proves the host can read it.
func loopDevice(t *testing.T, n string) (dev, magic string, ok bool) {
	magic = "GOALBOXDISK-" + n
	img := filepath.Join(t.TempDir(), "disk.img")
	data := append([]byte(magic), make([]byte, 1<<20)...)
	if err := os.WriteFile(img, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).Output()
	if err != nil {
		t.Logf("no loop device here (%v): block device attack skipped", err)
		return "", "", false
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	if got, err := os.ReadFile(dev); err != nil || !bytes.HasPrefix(got, []byte(magic)) {
		t.Errorf("positive control: the host cannot read its loop device %s: %v", dev, err)
	}
	return dev, magic, true
}

// rootSetuidCopy puts a root-owned setuid copy of program into dir, and proves it gives root to an unprivileged
// user on the host (outside the sandbox): a file it makes there belongs to root.
func rootSetuidCopy(t *testing.T, dir, program, name string) (string, bool) {
	data, err := os.ReadFile(program)
	if err != nil {
		return "", false
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 0, 0); err != nil || os.Chmod(p, 0o4755) != nil {
		t.Fatal("cannot make the setuid copy")
	}
	ctl := t.TempDir()
	_ = os.Chmod(ctl, 0o777)
	_ = os.Chmod(filepath.Dir(ctl), 0o711)
	_ = os.Chmod(dir, 0o755)
	cmd := exec.Command(p, "/etc/hostname", filepath.Join(ctl, "made"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("positive control: the setuid copy does not run as nobody on the host (%v: %s); attack skipped", err, out)
		return "", false
	}
	if owner, ok := fileOwner(filepath.Join(ctl, "made")); !ok || owner != 0 {
		t.Logf("positive control: the setuid copy does not give root on the host here (owner %d); attack skipped", owner)
		return "", false
	}
	return p, true
}

func fileOwner(p string) (uint32, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0, false
	}
	return fi.Sys().(*syscall.Stat_t).Uid, true
}

// processWithArg reports whether a host process has arg among its arguments.
func processWithArg(arg string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(arg)) {
			return true
		}
	}
	return false
}

// CrossCommandInjection: while one call runs, a second tries to write into the first one's output through
// /proc/<pid>/fd/1 of every process it can see. The positive control shows the mechanism works on a command's own
// output.
func CrossCommandInjection(t *testing.T, srv *Server) {
	n := RandomHex(6)
	// The command's own pipes are the run-as user's, so reopening them through /proc works: the positive
	// control. (The server's pipes to a command belong to the server's user; for a root server they cannot be
	// reopened at all, so the victim below writes through a pipe of its own, as the attack needs.)
	self := MustRun(t, srv.Session, protocol.RunCommandInput{Command: fmt.Sprintf("sh -c 'echo INJECTED-self-%s > /proc/$$/fd/1' | cat", n)})
	if !strings.Contains(self.Stdout, "INJECTED-self-"+n) {
		t.Errorf("positive control: a command cannot write to its own output through /proc: %+v", self)
	}
	var wg sync.WaitGroup
	var victim protocol.RunCommandOutput
	wg.Go(func() {
		victim = MustRun(t, srv.Session, protocol.RunCommandInput{Command: "(sleep 3; echo victim-done) | cat", TimeoutSeconds: 30})
	})
	time.Sleep(800 * time.Millisecond)
	inj := MustRun(t, srv.Session, protocol.RunCommandInput{Command: fmt.Sprintf(`for f in /proc/[0-9]*/fd/1 /proc/[0-9]*/fd/2; do echo INJECTED-%s > $f; done 2>/dev/null; true`, n)})
	wg.Wait()
	if strings.Contains(victim.Stdout+victim.Stderr, "INJECTED-"+n) {
		t.Errorf("one command wrote into another's output: %q", victim.Stdout)
	}
	if !strings.Contains(victim.Stdout, "victim-done") {
		t.Errorf("victim: %+v (injector %+v)", victim, inj)
	}
}

// openHostPty opens a new pseudo-terminal on the host's devpts and returns its master and the slave's path.
func openHostPty() (*os.File, string, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, "", err
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		m.Close()
		return nil, "", err
	}
	return m, "/dev/pts/" + strconv.Itoa(n), nil
}
