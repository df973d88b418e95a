package pathguard

import (
	"fmt"
	"strings"
)

// Windows-style paths. The contract's paths are workspace-relative with "/" between names, and a workspace must mean
// the same on every platform the servers run on: a name that Windows would read differently from Linux (a drive, a
// UNC share, a separator, a device, a stream, a name Windows trims) is refused on every platform, Linux included,
// with a message that says what was wrong and what is allowed. Nothing is mapped: "a\b" is one file on Linux and two
// names on Windows, and guessing which the client meant would make the same call do different things. The rules,
// in the order they are checked (the first that applies gives the message):
//
//   - a path that starts with two slashes of either kind ("\\server\share", "\\?\C:\x", "//server/share") is a UNC
//     or device path on Windows;
//   - a path that starts with a drive letter and a colon ("C:\x", "C:x", "c:/x") names a drive;
//   - a backslash anywhere is a separator on Windows and a plain character on Unix;
//   - in any name of the path: a reserved device name (CON, PRN, AUX, NUL, COM0-COM9, LPT0-LPT9, the superscript
//     COM¹-COM³ and LPT¹-LPT³, CONIN$, CONOUT$), in any case, alone or with an extension or trailing spaces ("nul.txt",
//     "con ", "src/aux.c");
//   - a colon (an alternate data stream, "a.txt:stream", or a drive);
//   - a name that ends in a dot or a space ("a.txt.", "dir "), which Windows drops;
//   - the other characters Windows does not allow in a name: < > " | ? * and the control characters 1-31.
//
// "." and ".." are path syntax, not names, and are left to Clean. The rules apply to client paths only: names that
// commands made on disk are still listed (and followed through symlinks); a tool call that names one is refused.

// portable checks the client path p (NUL bytes already refused) for UNC, drive and backslash spellings; root is the
// advertised root, for the message.
func portable(p, root string) error {
	allowed := `paths are relative to the workspace with "/" between names (e.g. "src/main.go"), or absolute under ` + root
	switch {
	case len(p) >= 2 && isSlash(p[0]) && isSlash(p[1]):
		return invalid(p, `a path that starts with two slashes is a UNC or device path on Windows (\\server\share, \\?\C:\...); `+allowed)
	case len(p) >= 2 && isLetter(p[0]) && p[1] == ':':
		return invalid(p, fmt.Sprintf("%q is a drive letter: the workspace has no drives; %s", p[:2], allowed))
	case strings.IndexByte(p, '\\') >= 0:
		return invalid(p, `"\" is not a separator here (it is one on Windows and an ordinary character on Linux, so it is refused everywhere); `+allowed)
	}
	return nil
}

// portableNames checks each name of rel, the client path made relative to the workspace (its absolute prefix, which
// the server's own configuration chose, is not judged), against the rules above. p is the path as given, for the
// message.
func portableNames(p, rel string) error {
	for name := range strings.SplitSeq(rel, "/") {
		if name == "" || name == "." || name == ".." {
			continue
		}
		if dev, ok := reservedName(name); ok {
			return invalid(p, fmt.Sprintf("%q is the reserved device name %s on Windows (CON, PRN, AUX, NUL, COM0-9, LPT0-9, CONIN$, CONOUT$, with or without an extension), refused on every platform so the workspace means the same everywhere; choose another name", name, strings.ToUpper(dev)))
		}
		if strings.IndexByte(name, ':') >= 0 {
			return invalid(p, fmt.Sprintf(`%q has a colon: on Windows "a.txt:s" names an alternate data stream of a.txt and "C:" a drive, so ":" is not allowed in a name`, name))
		}
		if last := name[len(name)-1]; last == '.' || last == ' ' {
			return invalid(p, fmt.Sprintf(`%q ends in %q, which Windows drops ("a.txt." would be "a.txt"), so a name may not end in a dot or a space`, name, string(last)))
		}
		if i := strings.IndexFunc(name, func(r rune) bool { return r < 32 || strings.ContainsRune(`<>"|?*`, r) }); i >= 0 {
			return invalid(p, fmt.Sprintf(`%q has %q, which Windows does not allow in a file name (< > " | ? * and control characters), so it is refused everywhere`, name, string(name[i])))
		}
	}
	return nil
}

// reservedName reports whether name is a Windows device name, and which (as spelled in name): the part before the
// first dot or colon, less trailing spaces, is CON, PRN, AUX, NUL, COM0-9, LPT0-9 (or COM/LPT with a superscript
// one, two or three), CONIN$ or CONOUT$, in any case. Windows 11 lets some of them carry an extension ("con.txt");
// older Windows does not, so every extension is refused.
func reservedName(name string) (string, bool) {
	base := name
	if i := strings.IndexAny(base, ".:"); i >= 0 {
		base = base[:i]
	}
	base = strings.TrimRight(base, " ")
	switch u := strings.ToUpper(base); {
	case u == "CON", u == "PRN", u == "AUX", u == "NUL", u == "CONIN$", u == "CONOUT$":
		return base, true
	case len(u) > 3 && (u[:3] == "COM" || u[:3] == "LPT"):
		switch u[3:] {
		case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "\u00b9", "\u00b2", "\u00b3":
			return base, true
		}
	}
	return "", false
}

func isSlash(c byte) bool { return c == '/' || c == '\\' }

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
