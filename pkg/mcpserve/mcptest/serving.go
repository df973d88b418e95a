package mcptest

import (
	"encoding/json"
	"net/url"
	"strings"
)

// AnyPort is what tests give a server process to listen on: a loopback port of the kernel's choosing, taken at the
// listen itself; ServingAddr then reads which. A port found free beforehand (listen, close, hand it over) could be
// taken before the server listened on it, by a test of another package running beside, whose server would then
// answer the health check meant for this one.
const AnyPort = "127.0.0.1:0"

// ServingAddr is the host:port a server's JSON log names in its "serving" line (mcpserve.Run), "" until that line
// is logged, which is before the server answers a request.
func ServingAddr(logs string) string {
	for _, line := range strings.Split(logs, "\n") {
		var l struct {
			Msg string `json:"msg"`
			URL string `json:"url"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" {
			if u, err := url.Parse(l.URL); err == nil && u.Host != "" {
				return u.Host
			}
		}
	}
	return ""
}
