// Command healthprobe is the containers' health check: it GETs a goalbox server's health endpoint and exits 0 only
// when the server answers 200 with {"status":"ok"}. The filesystem image has no shell and no curl, so the probe is
// a static binary of its own; the executor image uses the same one so both check health the same way.
//
//	healthprobe [URL]   (default http://127.0.0.1:7101/healthz)
//
// It lives in its own module, outside the workspace, because it is part of the images, not of the servers.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	url := "http://127.0.0.1:7101/healthz"
	if len(os.Args) > 1 {
		url = os.Args[1]
	}
	if err := probe(url); err != nil {
		fmt.Fprintln(os.Stderr, "healthprobe:", err)
		os.Exit(1)
	}
}

func probe(url string) error {
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	var health struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &health); err != nil {
		return fmt.Errorf("%s did not answer JSON: %w", url, err)
	}
	if health.Status != "ok" {
		return fmt.Errorf("%s reports status %q", url, health.Status)
	}
	return nil
}
