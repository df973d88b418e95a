package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker/dockertest"
)

// Images from tools reach a vision model as image parts: the data-analysis example end to end, and -vision.

const salesCSV = `date,category,amount
2025-01-03,Books,120.50
2025-01-03,Electronics,899.00
2025-01-04,Garden,45.25
2025-01-05,Books,80.00
2025-01-06,Electronics,450.00
2025-01-07,Garden,310.75
2025-01-08,Toys,99.99
`

const analyseScript = `import matplotlib
matplotlib.use("Agg")  # no display in the sandbox
import matplotlib.pyplot as plt
import pandas as pd

sales = pd.read_csv("sales.csv")
totals = sales.groupby("category")["amount"].sum().sort_values(ascending=False)
print(totals.to_string())
print("highest:", totals.index[0], totals.iloc[0])
ax = totals.plot.bar(title="Sales by category")
ax.set_ylabel("amount")
plt.tight_layout()
plt.savefig("output.png")
`

// pythonWithPlots is a python3 that imports pandas and matplotlib, as the sandbox's commands would find it (the
// local backend passes PATH through; Debian's own python3 is where apt puts the libraries), or "".
func pythonWithPlots() string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import pandas, matplotlib").Run() == nil {
			return p
		}
	}
	return ""
}

func dataURLBytes(t testing.TB, url string) []byte {
	t.Helper()
	b64, ok := strings.CutPrefix(url, "data:image/png;base64,")
	if !ok {
		t.Fatalf("image part is not a PNG data URL: %.60s", url)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("image part's base64: %v", err)
	}
	return b
}

// imageMessages are the messages of req that carry images.
func imageMessages(req looptest.Request) []looptest.Message {
	var out []looptest.Message
	for _, m := range req.Messages {
		if len(m.ImageURLs()) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// TestDataAnalysisChartReachesTheModel is the data-analysis assistant: "analyse sales.csv, find the category with
// the highest sales, draw a bar chart, save it as output.png". The scripted model writes a pandas + matplotlib
// script, runs it in the sandbox (local backend), reads output.png, and the next request carries the chart as an
// image part whose bytes are the PNG the script wrote, in a user message after the tool results (OpenAI's rule,
// enforced by the scripted server).
func TestDataAnalysisChartReachesTheModel(t *testing.T) {
	py := pythonWithPlots()
	if py == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no python3 imports pandas and matplotlib: scripts/setup-toolchains.sh installs python3-pandas and python3-matplotlib")
		}
		t.Skip("no python3 imports pandas and matplotlib (apt-get install python3-pandas python3-matplotlib, or run scripts/setup-toolchains.sh); CI runs this test")
	}
	dataAnalysis(t, py, nil, "-backend", "local")
}

// TestDataAnalysisOnDocker is the same on the docker backend, in an image with Debian's pandas and matplotlib:
// GOALBOX_DATA_IMAGE, or goalbox/executor:latest (deploy/Dockerfile.exec installs them).
func TestDataAnalysisOnDocker(t *testing.T) {
	cli, _ := dockertest.Require(t)
	image := os.Getenv("GOALBOX_DATA_IMAGE")
	if image == "" {
		image = "goalbox/executor:latest"
	}
	if _, err := cli.ImageInspect(t.Context(), image); err != nil {
		msg := fmt.Sprintf("no image %s with pandas and matplotlib (docker build -f deploy/Dockerfile.exec -t goalbox/executor:latest ., or set GOALBOX_DATA_IMAGE): %v", image, err)
		if os.Getenv("CI") == "true" { // scripts/test.sh builds the image before the tests
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dataAnalysis(t, "python3", func(ws string) {
		if os.Getuid() == 0 { // commands never run as root: as the workspace's owner, who must reach it
			if err := os.Chmod(filepath.Dir(ws), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(ws, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}
	}, "-backend", "docker", "-image", image)
}

// dataAnalysis runs the example with py as the interpreter the model calls; setup prepares the workspace further.
func dataAnalysis(t *testing.T, py string, setup func(ws string), args ...string) {
	var ws string
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("analyse.py", analyseScript)}},
		looptest.Step{Calls: []looptest.Call{command(py + " analyse.py")}},
		looptest.Step{Calls: []looptest.Call{{Name: protocol.ToolReadFile, Args: `{"path":"output.png"}`}},
			Check: func(t testing.TB, req looptest.Request) {
				tm := toolMessages(req)
				if out := tm[len(tm)-1].Text(); !strings.Contains(out, `"exit_code":0`) || !strings.Contains(out, "highest: Electronics 1349.0") {
					t.Errorf("the script should run in the sandbox and find Electronics: %s", out)
				}
			}},
		looptest.Step{Content: "Electronics has the highest sales (1349.00); the bar chart is in output.png.",
			Check: func(t testing.TB, req looptest.Request) {
				imgs := imageMessages(req)
				if len(imgs) != 1 {
					t.Fatalf("want one message with an image, got %d: %.2000s", len(imgs), req.Raw)
				}
				last := req.Messages[len(req.Messages)-1]
				if last.Role != "user" || len(last.ImageURLs()) != 1 || !strings.Contains(last.Text(), "output.png") {
					t.Errorf("the chart should come last, in a user message naming the file: %s %q", last.Role, last.Text())
				}
				tm := toolMessages(req)
				if read := tm[len(tm)-1].Text(); !strings.Contains(read, `"mime_type":"image/png"`) || !strings.Contains(read, "next user message") {
					t.Errorf("the read's tool message should hold its JSON and say where the image went: %s", read)
				}
				onDisk, err := os.ReadFile(filepath.Join(ws, "output.png"))
				if err != nil {
					t.Fatal(err)
				}
				if got := dataURLBytes(t, last.ImageURLs()[0]); !bytes.Equal(got, onDisk) || !bytes.HasPrefix(got, []byte("\x89PNG")) {
					t.Errorf("the image part is %d bytes, not the %d-byte PNG the script wrote", len(got), len(onDisk))
				}
			}},
	)
	model.Rules = []looptest.Rule{looptest.ImagesOnlyInUserMessages}
	r := runAgent(t, model, "", func(dir string) {
		ws = dir
		if err := os.WriteFile(filepath.Join(dir, "sales.csv"), []byte(salesCSV), 0o644); err != nil {
			t.Fatal(err)
		}
		if setup != nil {
			setup(dir)
		}
	}, append([]string{"-goal", "analyse sales.csv, find the category with the highest sales, draw a bar chart, save it as output.png",
		"-verify", "test -s output.png", "-vision", "on"}, args...)...)
	r.want(t, exitMet, "met", "done")
	if n := len(model.Requests()); n != 4 {
		t.Errorf("want 4 model requests, got %d", n)
	}
	if !strings.Contains(r.stderr, "1 image(s)") {
		t.Errorf("the progress line of the read should count its image:\n%s", r.stderr)
	}
}

// tinyPNG is a 4×2 PNG.
func tinyPNG(t testing.TB) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 2))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestVisionFlag: auto sends images to a model on the known list and not to others; off never; an image bigger
// than a quarter of the context budget is left out with a note.
func TestVisionFlag(t *testing.T) {
	pic := tinyPNG(t)
	for _, tc := range []struct {
		name  string
		args  []string
		image bool
		note  string
		big   bool
	}{
		{"auto, a vision model", []string{"-model", "gpt-4o-mini"}, true, "next user message", false},
		{"auto, a text model", []string{"-model", "deepseek-chat"}, false, "not shown: the model is not sent images", false},
		{"off", []string{"-model", "gpt-4o-mini", "-vision", "off"}, false, "not shown: the model is not sent images", false},
		{"on, within the budget", []string{"-vision", "on", "-context-bytes", "24000"}, true, "next user message", false},
		{"on, over the budget", []string{"-vision", "on", "-context-bytes", "24000"}, false, "more than the context budget allows", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := pic
			if tc.big {
				file = bigPNG(t, 8000) // over a quarter of 24000 bytes as base64
			}
			model := looptest.New(t,
				looptest.Step{Calls: []looptest.Call{{Name: protocol.ToolReadFile, Args: `{"path":"pic.png"}`}}},
				looptest.Step{Content: "seen",
					Check: func(t testing.TB, req looptest.Request) {
						imgs := imageMessages(req)
						if tc.image != (len(imgs) == 1) {
							t.Fatalf("image sent: %v, want %v", len(imgs) == 1, tc.image)
						}
						if tc.image && !bytes.Equal(dataURLBytes(t, imgs[0].ImageURLs()[0]), file) {
							t.Error("the image part is not the file's bytes")
						}
						tm := toolMessages(req)
						if !strings.Contains(tm[0].Text(), tc.note) {
							t.Errorf("tool message should say %q: %s", tc.note, tm[0].Text())
						}
					}},
			)
			model.Rules = []looptest.Rule{looptest.ImagesOnlyInUserMessages}
			r := runAgent(t, model, "", func(dir string) {
				if err := os.WriteFile(filepath.Join(dir, "pic.png"), file, 0o644); err != nil {
					t.Fatal(err)
				}
			}, append([]string{"-goal", "look at pic.png"}, tc.args...)...)
			r.want(t, exitNotMet, "unverified", "done")
		})
	}
}

// bigPNG is a PNG of at least n bytes: noise does not compress.
func bigPNG(t testing.TB, n int) []byte {
	side := 8
	for {
		img := image.NewRGBA(image.Rect(0, 0, side, side))
		for i := range img.Pix {
			img.Pix[i] = byte(i*7919 + i*i*31)
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		if b.Len() >= n {
			return b.Bytes()
		}
		side += 4
	}
}

// TestImagesStayWithinTheContextBudget: a model that reads a 6 KB picture every turn under a 40 000-byte budget.
// Every request as sent stays within it; old pictures are elided (with a note) before anything else must go.
func TestImagesStayWithinTheContextBudget(t *testing.T) {
	const budget, turns = 40_000, 10
	pic := bigPNG(t, 6000)
	if 4*len(pic)/3 > budget/4 {
		t.Fatalf("the picture (%d bytes) should fit the quarter of the budget one image may take", len(pic))
	}
	model := looptest.New(t)
	model.Repeat = &looptest.Step{Calls: []looptest.Call{{Name: protocol.ToolReadFile, Args: `{"path":"pic.png"}`}}}
	model.Rules = []looptest.Rule{looptest.ImagesOnlyInUserMessages}
	r := runAgent(t, model, "", func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "pic.png"), pic, 0o644); err != nil {
			t.Fatal(err)
		}
	}, "-goal", "stare at pic.png", "-vision", "on", "-context-bytes", "40000", "-max-turns", "10")
	r.want(t, exitNotMet, "not_met", "max_turns")
	reqs := model.Requests()
	if len(reqs) != turns {
		t.Fatalf("%d requests, want %d", len(reqs), turns)
	}
	elided := false
	for i, req := range reqs {
		if len(req.Raw) > budget {
			t.Errorf("request %d: %d bytes, over the %d budget", i+1, len(req.Raw), budget)
		}
		for _, m := range req.Messages {
			elided = elided || strings.Contains(m.Text(), "image(s) shown earlier were removed")
		}
	}
	last := reqs[len(reqs)-1]
	if imgs := imageMessages(last); !elided || len(imgs) == 0 || len(imgs) >= turns-1 {
		t.Errorf("old images should be elided and the latest kept: %d image messages in the last request, elided %v", len(imgs), elided)
	}
	if got := dataURLBytes(t, last.Messages[len(last.Messages)-1].ImageURLs()[0]); !bytes.Equal(got, pic) {
		t.Error("the latest image should be the file, whole")
	}
}
