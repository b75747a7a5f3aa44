// Package loadtest measures knit serve under load: a real server process
// on a loopback port over a store seeded with many environments, driven by
// a bounded load generator (a fixed number of clients for a fixed time,
// loopback only), plus one git commit that touches many environments.
package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store/sqlite"
)

// Config says what to measure.
type Config struct {
	Knit       string        // the knit binary
	Work       string        // scratch folder
	Envs       int           // environments in the store (10,000)
	Components int           // components each (20)
	Clients    int           // concurrent clients of the throughput test (50)
	Duration   time.Duration // how long the throughput test runs (10s)
	Samples    int           // sequential requests per latency figure (1,000)
	FanOut     int           // environments one commit touches (100)
	MaxRuns    int           // the fan-out server's --max-concurrent-runs (4)
	// Data, when set, is a seeded data directory kept between runs: seeded
	// when it has no database yet, reused as it is otherwise (for iterating).
	Data string
	// CPUProfile, when set, is where the measured server writes its CPU
	// profile (knit serve --cpu-profile).
	CPUProfile string
	// Replicas, when positive, adds the PostgreSQL row: that many
	// replicas on one database holding the same store, round-robin.
	Replicas int
	Log      io.Writer
}

// Report is what was measured.
type Report struct {
	Envs, Components, Samples          int
	SeedTime                           time.Duration
	ListP50, ListP99, OneP50, OneP99   time.Duration
	Clients                            int
	Duration                           time.Duration
	Requests, Errors                   int64
	IdleRSS, LoadedRSS                 int64 // bytes
	FanOut, MaxRuns, MaxConcurrentSeen int
	FanOutTime                         time.Duration
	// SummaryHits and DetailHits are the shares of lookups the view cache
	// answered during the clients' run (a page of summaries counts once).
	SummaryHits, DetailHits float64
	// Uncached are the requests and errors of the same clients against a
	// server without a view cache (--view-cache-mb 0): every view read
	// from SQLite and encoded.
	UncachedRequests, UncachedErrors int64
	// The PostgreSQL row (Replicas > 0): the store copied in PGMigrate,
	// the same latency samples and clients, round-robin over Replicas.
	Replicas                                 int
	PGMigrate                                time.Duration
	PGListP50, PGListP99, PGOneP50, PGOneP99 time.Duration
	PGRequests, PGErrors                     int64
}

// PGRPS is the PostgreSQL row's requests per second.
func (r Report) PGRPS() float64 { return float64(r.PGRequests) / r.Duration.Seconds() }

// UncachedRPS is RPS without the view cache.
func (r Report) UncachedRPS() float64 { return float64(r.UncachedRequests) / r.Duration.Seconds() }

// RPS is the throughput test's requests per second.
func (r Report) RPS() float64 { return float64(r.Requests) / r.Duration.Seconds() }

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// Run measures everything in Report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	rep := Report{Envs: cfg.Envs, Components: cfg.Components, Samples: cfg.Samples, Clients: cfg.Clients,
		Duration: cfg.Duration, FanOut: cfg.FanOut, MaxRuns: cfg.MaxRuns}
	data, fresh := cfg.Data, true
	if data == "" {
		data = filepath.Join(cfg.Work, "seeded")
	} else if _, err := os.Stat(filepath.Join(data, sqlite.DBFile)); err == nil {
		fresh = false
	}
	start := time.Now()
	token, err := seed(ctx, data, cfg.Envs, cfg.Components, fresh)
	if err != nil {
		return rep, fmt.Errorf("seed: %w", err)
	}
	rep.SeedTime = time.Since(start)
	cfg.logf("seeded %d environments × %d components in %s", cfg.Envs, cfg.Components, rep.SeedTime.Round(time.Millisecond))
	var args []string
	if cfg.CPUProfile != "" {
		args = append(args, "--cpu-profile", cfg.CPUProfile)
	}
	srv, err := startServer(ctx, cfg.Knit, data, cfg.Work, args...)
	if err != nil {
		return rep, err
	}
	defer srv.stop()
	time.Sleep(2 * time.Second)
	rep.IdleRSS = rss(srv.cmd.Process.Pid)
	c := newClient(srv.url, token, cfg.Clients)

	// Latency: sequential requests, each page after a random cursor.
	lists, err := c.sample(ctx, cfg.Samples, func(i int) string {
		return fmt.Sprintf("/api/v1/environments?limit=50&cursor=%s", envID((i*7919)%cfg.Envs, cfg.Envs))
	})
	if err != nil {
		return rep, err
	}
	rep.ListP50, rep.ListP99 = percentile(lists, 50), percentile(lists, 99)
	ones, err := c.sample(ctx, cfg.Samples, func(i int) string {
		return "/api/v1/environments/" + envID((i*104729)%cfg.Envs, cfg.Envs)
	})
	if err != nil {
		return rep, err
	}
	rep.OneP50, rep.OneP99 = percentile(ones, 50), percentile(ones, 99)
	cfg.logf("latency: list p99 %s, one environment p99 %s", rep.ListP99, rep.OneP99)

	// Throughput: Clients clients for Duration, half lists, half single environments.
	srvCPU, ownCPU := cpuTime(srv.cmd.Process.Pid), cpuTime(os.Getpid())
	rep.Requests, rep.Errors = c.hammer(ctx, cfg.Clients, cfg.Duration, cfg.Envs)
	rep.LoadedRSS = rss(srv.cmd.Process.Pid)
	cfg.logf("throughput: %.0f requests/s, %d errors; CPU time: server %s, load generator %s", rep.RPS(), rep.Errors,
		cpuTime(srv.cmd.Process.Pid)-srvCPU, cpuTime(os.Getpid())-ownCPU)
	m, err := c.body(ctx, "/metrics")
	if err != nil {
		return rep, err
	}
	rep.SummaryHits, rep.DetailHits = hitShare(m, "summary"), hitShare(m, "detail")
	cfg.logf("view cache: %.0f%% of summary pages and %.0f%% of details served from it", 100*rep.SummaryHits, 100*rep.DetailHits)
	srv.stop()

	// The same clients against a server that reads every view afresh.
	srv, err = startServer(ctx, cfg.Knit, data, cfg.Work, "--view-cache-mb", "0")
	if err != nil {
		return rep, err
	}
	defer srv.stop()
	c = newClient(srv.url, token, cfg.Clients)
	rep.UncachedRequests, rep.UncachedErrors = c.hammer(ctx, cfg.Clients, cfg.Duration, cfg.Envs)
	cfg.logf("throughput without the view cache: %.0f requests/s, %d errors", rep.UncachedRPS(), rep.UncachedErrors)
	srv.stop()

	if cfg.Replicas > 0 {
		if err := pgRow(ctx, cfg, data, token, &rep); err != nil {
			return rep, err
		}
	}
	if cfg.FanOut > 0 {
		seen, took, err := fanOut(ctx, cfg)
		if err != nil {
			return rep, fmt.Errorf("fan-out: %w", err)
		}
		rep.MaxConcurrentSeen, rep.FanOutTime = seen, took
		cfg.logf("one commit, %d environments: reconciled in %s, at most %d runs at once", cfg.FanOut, took.Round(time.Millisecond), seen)
	}
	return rep, nil
}

// envID is the ID of the i-th seeded environment.
func envID(i, n int) string { return fmt.Sprintf("team%02d/env%05d", i%50, i) }

// seed fills a data dir (unless fresh is false: seeded before) and returns
// an admin token for it.
func seed(ctx context.Context, dir string, envs, comps int, fresh bool) (string, error) {
	if fresh {
		st, err := sqlite.Open(ctx, dir)
		if err != nil {
			return "", err
		}
		err = st.Seed(ctx, envs, comps, seedSpec)
		st.Close()
		if err != nil {
			return "", err
		}
	}
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dir}})
	if err != nil {
		return "", err
	}
	defer k.Close()
	name := "loadtest"
	if !fresh { // a kept store has the tokens of earlier runs
		name = fmt.Sprintf("loadtest-%d", time.Now().UnixNano())
	}
	tok, _, err := knit.NewCreateToken(k, name, "admin", nil, "loadtest").Run(ctx)
	return tok, err
}

// seedSpec is a seeded environment: a chain of script components.
func seedSpec(team, env string, comps int) []byte {
	type script struct {
		Apply string `json:"apply"`
	}
	type component struct {
		Name      string   `json:"name"`
		Type      string   `json:"type"`
		DependsOn []string `json:"dependsOn,omitempty"`
		Script    script   `json:"script"`
	}
	cs := make([]component, comps)
	for i := range cs {
		cs[i] = component{Name: fmt.Sprintf("c%02d", i), Type: "script", Script: script{Apply: "true"}}
		if i > 0 {
			cs[i].DependsOn = []string{fmt.Sprintf("c%02d", i-1)}
		}
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "knit.dev/v1", "kind": "Environment",
		"metadata": map[string]string{"name": team + "-" + env},
		"spec":     map[string]any{"teamName": team, "envName": env, "autoApprove": true, "components": cs}})
	return b
}

// proc is a knit serve process.
type proc struct {
	cmd *exec.Cmd
	url string
	mu  sync.Mutex
	log strings.Builder
}

var listening = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)

func startServer(ctx context.Context, knitBin, dataDir, work string, args ...string) (*proc, error) {
	cmd := exec.CommandContext(ctx, knitBin, append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--log-format", "json"}, args...)...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "KNIT_ACTOR=loadtest")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		p.url = "http://" + a
		return p, nil
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, fmt.Errorf("knit serve did not start:\n%s", p.log.String())
	}
}

func (p *proc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// rss is a process's resident memory in bytes (Linux), or 0.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// cpuTime is a process's user and system CPU time so far (Linux), or 0.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 12th and 13th of those, in clock ticks (100 a second).
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// client calls the API with a token. It is meant to cost the server's
// cores (which it shares) little: connections are kept, bodies are read
// into a buffer and dropped, never parsed; statuses are checked.
type client struct {
	base, token string
	// bases, when set, are several replicas called in turn instead of base.
	bases []string
	next  atomic.Uint64
	http  *http.Client
	auth  []string // the Authorization header's value, made once
}

// requestTimeout bounds one request, so a stuck server fails the test.
const requestTimeout = 10 * time.Second

func newClient(base, token string, clients int) *client {
	tr := &http.Transport{MaxIdleConnsPerHost: clients * 2, DisableCompression: true}
	return &client{base: base, token: token, http: &http.Client{Transport: tr, Timeout: requestTimeout},
		auth: []string{"Bearer " + token}}
}

func (c *client) get(ctx context.Context, path string) error {
	return c.do(ctx, path, io.Discard)
}

// body is the body of GET path.
func (c *client) body(ctx context.Context, path string) ([]byte, error) {
	var b bytes.Buffer
	err := c.do(ctx, path, &b)
	return b.Bytes(), err
}

// do sends GET path and copies the body to w.
func (c *client) do(ctx context.Context, path string, w io.Writer) error {
	base := c.base
	if len(c.bases) > 0 {
		base = c.bases[(c.next.Add(1)-1)%uint64(len(c.bases))]
	}
	req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	if err != nil {
		return err
	}
	req.Header["Authorization"] = c.auth
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}

// hitShare is the share of view's lookups the view cache answered, read
// from a /metrics body (0 when it has none).
func hitShare(metrics []byte, view string) float64 {
	count := func(result string) float64 {
		re := regexp.MustCompile(`(?m)^knit_view_cache_lookups_total\{result="` + result + `",view="` + view + `"\} (\S+)$`)
		m := re.FindSubmatch(metrics)
		if m == nil {
			return 0
		}
		n, _ := strconv.ParseFloat(string(m[1]), 64)
		return n
	}
	hit, miss := count("hit"), count("miss")
	if hit+miss == 0 {
		return 0
	}
	return hit / (hit + miss)
}

// sample times n sequential requests.
func (c *client) sample(ctx context.Context, n int, path func(i int) string) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if err := c.get(ctx, path(i)); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// hammer runs clients concurrent clients for d (bounded in time, loopback
// only) and counts requests and errors.
func (c *client) hammer(ctx context.Context, clients int, d time.Duration, envs int) (int64, int64) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ok, bad atomic.Int64
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				path := "/api/v1/environments/" + envID((w*7919+i*31)%envs, envs)
				if i%2 == 0 {
					path = "/api/v1/environments?limit=50&cursor=" + envID((w*104729+i*13)%envs, envs)
				}
				if err := c.get(ctx, path); err != nil {
					if ctx.Err() == nil {
						bad.Add(1)
					}
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	return ok.Load(), bad.Load()
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}
