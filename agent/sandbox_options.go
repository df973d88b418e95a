package main

import (
	"errors"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/execserver/backends"
)

// SandboxOptions say which sandbox a goal runs in: running servers (-fs-url, -exec-url), or both servers started
// in this process over -workspace and configured here.
type SandboxOptions struct {
	Workspace string `env:"GOALBOX_WORKSPACE" flag:"workspace" usage:"workspace folder for the in-process servers, created if missing"`
	FSURL     string `env:"GOALBOX_FS_URL" flag:"fs-url" usage:"MCP endpoint of a running filesystem server; with -exec-url, instead of in-process servers"`
	ExecURL   string `env:"GOALBOX_EXEC_URL" flag:"exec-url" usage:"MCP endpoint of a running executor server"`
	ServerTokens
	// Backend and Image configure the in-process executor, with the executor's own names (-backend, -image and
	// GOALBOX_EXEC_BACKEND, GOALBOX_EXEC_IMAGE) and its automatic choice.
	Backend string `env:"GOALBOX_EXEC_BACKEND" flag:"backend" usage:"in-process executor: where commands run: auto (local where it confines with namespaces, i.e. Linux; else docker when a Docker Engine answers, e.g. Docker Desktop on macOS or Windows), local or docker"`
	Image   string `env:"GOALBOX_EXEC_IMAGE" flag:"image" usage:"in-process executor, docker backend: the image commands run in, never pulled (default goalbox/executor:latest: docker build -f deploy/Dockerfile.exec -t goalbox/executor:latest .)"`
	// Protect and Unprotect adjust the protected project files of both in-process servers, as the servers' own
	// -protect and -unprotect do; their usage is protectFlags.
	Protect    []string              `env:"GOALBOX_PROTECT" envSeparator:"," flag:"protect" flagList:"repeat"`
	Unprotect  []string              `env:"GOALBOX_UNPROTECT" envSeparator:"," flag:"unprotect" flagList:"repeat"`
	protection *pathguard.Protection // from Protect and Unprotect, for the in-process servers
	// NetAllow is the in-process executor's -net-allow (local backend, namespace mode): hosts its commands may reach.
	NetAllow string `env:"GOALBOX_EXEC_NET_ALLOW" flag:"net-allow" usage:"in-process executor: comma-separated hosts, *.domains (either with :port; default ports 80 and 443) and CIDRs commands may reach through the executor's egress proxy; empty: no network"`
	// Secrets are the in-process executor's -secret (local backend): credentials its commands use by placeholder.
	Secrets []string `env:"GOALBOX_EXEC_SECRET" envSeparator:"\n" flag:"secret" flagList:"repeat" usage:"in-process executor: NAME=SOURCE@HOST[,HOST...], repeatable (in the environment one per line): commands see NAME as a placeholder the egress proxy replaces by the value of SOURCE (env:VAR or file:PATH) only in HTTPS requests to HOST"`
}

func defaultSandboxOptions() SandboxOptions {
	return SandboxOptions{Workspace: "workspace", Backend: backends.Auto}
}

func (s SandboxOptions) check() error {
	switch {
	case (s.FSURL == "") != (s.ExecURL == ""):
		return errors.New("give both -fs-url and -exec-url (running servers), or neither (servers started in-process over -workspace)")
	case s.FSURL == "" && s.Workspace == "":
		return errors.New("no workspace: give -workspace DIR")
	case (len(s.Protect) > 0 || len(s.Unprotect) > 0) && s.FSURL != "":
		// Said rather than ignored: a person who asked for more protection must not believe they have it.
		return errors.New("-protect and -unprotect configure the in-process servers; running servers (-fs-url, -exec-url) take their own -protect and -unprotect")
	}
	return backends.CheckName(s.Backend)
}

// resolveProtection makes the in-process servers' protection from Protect and Unprotect.
func (s *SandboxOptions) resolveProtection() error {
	p, err := pathguard.ParseProtection(s.Protect, s.Unprotect)
	if err != nil {
		return err
	}
	s.protection = p
	return nil
}
