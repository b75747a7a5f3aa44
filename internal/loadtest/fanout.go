package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
)

// fanOut commits FanOut environment files at once to a git repository a
// server watches, waits until every one is applied, and reports the most
// runs it saw going at once (from the components' own start/end records)
// and how long it all took.
func fanOut(ctx context.Context, cfg Config) (int, time.Duration, error) {
	root := filepath.Join(cfg.Work, "fanout")
	bare, work, data := filepath.Join(root, "envs.git"), filepath.Join(root, "work"), filepath.Join(root, "data")
	events := filepath.Join(root, "events.log")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return 0, 0, err
	}
	git := func(dir string, args ...string) error { return runGit(ctx, dir, args...) }
	if err := git(root, "init", "-q", "--bare", "-b", "main", bare); err != nil {
		return 0, 0, err
	}
	if err := git(root, "clone", "-q", bare, work); err != nil {
		return 0, 0, err
	}
	_ = git(work, "checkout", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("fan-out\n"), 0o644); err != nil {
		return 0, 0, err
	}
	if err := git(work, "add", "."); err != nil {
		return 0, 0, err
	}
	if err := git(work, "commit", "-q", "-m", "start"); err != nil {
		return 0, 0, err
	}
	if err := git(work, "push", "-q", "origin", "main"); err != nil {
		return 0, 0, err
	}

	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: data}})
	if err != nil {
		return 0, 0, err
	}
	token, _, err := knit.NewCreateToken(k, "loadtest", "admin", nil, "loadtest").Run(ctx)
	k.Close()
	if err != nil {
		return 0, 0, err
	}
	srv, err := startServer(ctx, cfg.Knit, data, cfg.Work, "--git-url", "file://"+bare, "--git-path", "envs/",
		"--git-poll", "200ms", "--max-concurrent-runs", strconv.Itoa(cfg.MaxRuns))
	if err != nil {
		return 0, 0, err
	}
	defer srv.stop()

	// One commit, FanOut environments.
	if err := os.MkdirAll(filepath.Join(work, "envs"), 0o755); err != nil {
		return 0, 0, err
	}
	for i := range cfg.FanOut {
		name := fmt.Sprintf("e%03d", i)
		doc := fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: %[1]s}
spec:
  teamName: fan
  envName: %[1]s
  autoApprove: true
  components:
    - name: app
      type: script
      script: {apply: "echo start %[1]s $(date +%%s%%N) >> %[2]s; sleep 0.3; echo end %[1]s $(date +%%s%%N) >> %[2]s"}
`, name, events)
		if err := os.WriteFile(filepath.Join(work, "envs", name+".yaml"), []byte(doc), 0o644); err != nil {
			return 0, 0, err
		}
	}
	if err := git(work, "add", "."); err != nil {
		return 0, 0, err
	}
	if err := git(work, "commit", "-q", "-m", fmt.Sprintf("%d environments", cfg.FanOut)); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := git(work, "push", "-q", "origin", "main"); err != nil {
		return 0, 0, err
	}
	c := newClient(srv.url, token, 1)
	deadline := time.Now().Add(10 * time.Minute) // bounded: the test stops by itself
	for {
		n, err := c.provisioned(ctx, "fan")
		if err != nil {
			return 0, 0, err
		}
		if n == cfg.FanOut {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("only %d of %d environments applied after 10 minutes", n, cfg.FanOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	seen, err := maxOverlap(events)
	return seen, took, err
}

func (c *client) provisioned(ctx context.Context, team string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/api/v1/environments?limit=1000&status=provisioned&team="+team, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var page struct{ Items []json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return 0, err
	}
	return len(page.Items), nil
}

// maxOverlap reads "start NAME NS" / "end NAME NS" lines and returns the
// most intervals open at once.
func maxOverlap(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	type mark struct {
		at    int64
		delta int
	}
	var marks []mark
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		at, _ := strconv.ParseInt(f[2], 10, 64)
		d := 1
		if f[0] == "end" {
			d = -1
		}
		marks = append(marks, mark{at, d})
	}
	sort.Slice(marks, func(i, j int) bool {
		if marks[i].at != marks[j].at {
			return marks[i].at < marks[j].at
		}
		return marks[i].delta < marks[j].delta // an end before a start at the same instant
	})
	open, most := 0, 0
	for _, m := range marks {
		open += m.delta
		most = max(most, open)
	}
	return most, nil
}
