package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/controller"
	"knit.dev/knit/internal/controller/drift"
	"knit.dev/knit/internal/controller/gitops"
	"knit.dev/knit/internal/controller/leader"
	"knit.dev/knit/internal/controller/promotion"
	"knit.dev/knit/internal/controller/riverqueue"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/server"
)

// serveConfig is knit serve's config file (--config knit.yaml); flags
// given on the command line win over it.
type serveConfig struct {
	Listen    string `yaml:"listen"`
	PublicURL string `yaml:"publicURL"`
	DataDir   string `yaml:"dataDir"`
	// Store is the PostgreSQL URL of the store, StoreDSNFile a file
	// holding it (better: no password in the config file).
	Store             string   `yaml:"store"`
	StoreDSNFile      string   `yaml:"storeDSNFile"`
	MaxConcurrentRuns int      `yaml:"maxConcurrentRuns"`
	TLSCert           string   `yaml:"tlsCert"`
	TLSKey            string   `yaml:"tlsKey"`
	WebhookSecretFile string   `yaml:"webhookSecretFile"`
	LogFormat         string   `yaml:"logFormat"`
	DriftInterval     string   `yaml:"driftInterval"`
	TTLWarnBefore     string   `yaml:"ttlWarnBefore"`
	ToolEnv           []string `yaml:"toolEnv"`
	Policies          []string `yaml:"policies"`
	TFBinary          string   `yaml:"tfBinary"`
	ViewCacheMB       int      `yaml:"viewCacheMB"`
	Git               struct {
		URL        string `yaml:"url"`
		Branch     string `yaml:"branch"`
		Path       string `yaml:"path"`
		Poll       string `yaml:"poll"`
		SSHKeyFile string `yaml:"sshKeyFile"`
		TokenFile  string `yaml:"tokenFile"`
		// AllowedSigners is an SSH allowed signers file: a commit signed
		// by one of its keys is its principal's change; any other commit's
		// author is a name nobody checked.
		AllowedSigners string `yaml:"allowedSigners"`
		// PreviewBranches is a pattern of branches whose new heads are
		// previewed (planned, never applied): "feature/*".
		PreviewBranches string `yaml:"previewBranches"`
		// PreviewScripts lets previews run the plan commands of script
		// components of branches nobody reviewed (in the sandbox).
		PreviewScripts bool `yaml:"previewScripts"`
		// PreviewTimeout is each branch head's deadline, PreviewWorkers
		// how many are previewed at once.
		PreviewTimeout string `yaml:"previewTimeout"`
		PreviewWorkers int    `yaml:"previewWorkers"`
		// PreviewSandbox is the user and folder previews run code as and
		// in (docs/security.md).
		PreviewSandbox previewSandbox `yaml:"previewSandbox"`
	} `yaml:"git"`
	// Pipelines are pipeline files (kind: Pipeline) in the git repository.
	Pipelines []string `yaml:"pipelines"`
	// Owners map repository paths to teams (config file only): an
	// environment file there that does not validate is its team's to see.
	Owners        []gitops.Owner `yaml:"owners"`
	Notifications []serveSink    `yaml:"notifications"`
	// HTTP bounds what one client may hold (config file only; see
	// server.HTTPLimits for the defaults).
	HTTP struct {
		ReadTimeout        string `yaml:"readTimeout"`
		IdleTimeout        string `yaml:"idleTimeout"`
		StreamWriteTimeout string `yaml:"streamWriteTimeout"`
		MaxConnections     int    `yaml:"maxConnections"`
		MaxBodyMB          int    `yaml:"maxBodyMB"`
	} `yaml:"http"`

	minDriftEvery, driftTick time.Duration // hidden flags, for tests
	ttlTick                  time.Duration // hidden flag, for tests
	pipelineTick             time.Duration // hidden flag, for tests
	gitKeepTrees             int           // hidden flag, for tests
	// lockLease and leaderLease are the runs' lock lease and the leader's
	// (hidden flags: tests shorten them to see a replica's death soon).
	lockLease, leaderLease time.Duration
	cpuProfile             string // hidden flag, for knit-loadtest
}

type serveSink struct {
	Name       string   `yaml:"name"`
	Kind       string   `yaml:"kind"`
	URL        string   `yaml:"url"`
	SecretFile string   `yaml:"secretFile"`
	Events     []string `yaml:"events"`
}

func loadServeConfig(path string) (serveConfig, error) {
	var c serveConfig
	if path == "" {
		return c, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return c, err
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

func newServeCmd(d *deps) *cobra.Command {
	var configFile string
	var c serveConfig
	cmd := &cobra.Command{
		Use:   "serve [--listen 127.0.0.1:7070] [--git-url URL --git-path envs/]",
		Short: "Run knit as a server: API, run queue, GitOps, drift schedules",
		Long: `knit serve owns environments: it serves the API under /api/v1 (every call
needs a token: knit token create), runs at most --max-concurrent-runs runs at
once, fairly across environments, and with --git-url watches a git repository,
turning each commit's changed environment files into revisions it reconciles.
It listens on loopback unless told otherwise. SIGINT/SIGTERM shut it down
gracefully: running tools are interrupted and their runs recorded.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := loadServeConfig(configFile)
			if err != nil {
				return err
			}
			merge(cmd, &c, file)
			return d.serve(cmd.Context(), c)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "config file (YAML) with these settings, git, notifications and tools")
	f.StringVar(&c.Listen, "listen", "127.0.0.1:7070", "address to listen on")
	f.StringVar(&c.PublicURL, "public-url", "", "the dashboard's address as people reach it (https://knit.example.com), for links in notifications (default: the listen address)")
	f.IntVar(&c.MaxConcurrentRuns, "max-concurrent-runs", 4, "runs at once across environments")
	f.StringVar(&c.TLSCert, "tls-cert", "", "serve HTTPS with this certificate (PEM)")
	f.StringVar(&c.TLSKey, "tls-key", "", "and this key (PEM)")
	f.StringVar(&c.WebhookSecretFile, "webhook-secret-file", "", "file holding the HMAC secret of POST /api/v1/webhooks/git")
	f.StringVar(&c.LogFormat, "log-format", "text", "text or json")
	f.StringVar(&c.DriftInterval, "drift-interval", "", "check every environment for drift this often unless its file says otherwise (e.g. 30m; empty: only scheduled ones)")
	f.StringVar(&c.TTLWarnBefore, "ttl-warn-before", "1h", "send ttl.expiring this long before an ephemeral environment (spec.ttl) expires")
	f.IntVar(&c.ViewCacheMB, "view-cache-mb", 64, "memory for encoded environment views the API serves again while unchanged (0: none)")
	f.StringArrayVar(&c.Policies, "policies", nil, "folder of Rego policies (package knit) that judge every run's plan (repeatable)")
	f.StringArrayVar(&c.ToolEnv, "tool-env", nil, "let tools see this variable of knit's environment (repeatable)")
	f.DurationVar(&c.minDriftEvery, "drift-min-every", 0, "shortest @every drift schedule accepted (default 1m)")
	f.DurationVar(&c.driftTick, "drift-tick", 0, "how often due drift checks are looked for (default 1s)")
	f.IntVar(&c.gitKeepTrees, "git-keep-trees", 200, "commit trees kept on disk")
	_ = f.MarkHidden("git-keep-trees")  // for tests: reaching 200 takes 200 commits
	_ = f.MarkHidden("drift-min-every") // for tests: real schedules are minutes apart
	_ = f.MarkHidden("drift-tick")
	f.DurationVar(&c.ttlTick, "ttl-tick", 0, "how often expiries are looked at (default 1s)")
	_ = f.MarkHidden("ttl-tick")
	f.DurationVar(&c.lockLease, "lock-lease", 0, "how long a run's lock lives unrenewed (default 60s)")
	f.DurationVar(&c.leaderLease, "leader-lease", 0, "with a PostgreSQL store: how long the leader's lease lives unrenewed (default 30s)")
	_ = f.MarkHidden("lock-lease")
	_ = f.MarkHidden("leader-lease")
	f.StringVar(&c.cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run to this file")
	_ = f.MarkHidden("cpu-profile") // for knit-loadtest -cpu-profile
	f.StringSliceVar(&c.Pipelines, "pipeline", nil, "a promotion pipeline file (kind: Pipeline) in the --git-url repository; repeatable")
	f.DurationVar(&c.pipelineTick, "pipeline-tick", time.Second, "how often promotion rules are judged")
	_ = f.MarkHidden("pipeline-tick")
	f.StringVar(&c.Git.URL, "git-url", "", "git repository of environment files (file://, https://, ssh)")
	f.StringVar(&c.Git.Branch, "git-branch", "main", "branch to follow")
	f.StringVar(&c.Git.Path, "git-path", "", "folder of environment files in the repository")
	f.StringVar(&c.Git.Poll, "git-poll", "1m", "how often to fetch")
	f.StringVar(&c.Git.SSHKeyFile, "git-ssh-key-file", "", "private key for ssh URLs")
	f.StringVar(&c.Git.TokenFile, "git-token-file", "", "file holding an HTTPS token")
	f.StringVar(&c.Git.AllowedSigners, "git-allowed-signers", "", "SSH allowed signers file: a commit signed by one of its keys is its principal's change (else git's gpg.ssh.allowedSignersFile; an unsigned commit's author is trusted by no approval rule)")
	f.StringVar(&c.Git.PreviewBranches, "preview-branches", "", "preview the new heads of the branches matching this pattern (feature/*): plan every environment they change, never apply (GET /api/v1/previews, preview.ready)")
	f.BoolVar(&c.Git.PreviewScripts, "preview-scripts", false, "let previews run the plan commands of script components of unreviewed branches (in the sandbox; docs/security.md)")
	f.StringVar(&c.Git.PreviewTimeout, "preview-timeout", "5m", "deadline of one branch head's previews: then their tools are stopped and the preview recorded as timed out")
	f.IntVar(&c.Git.PreviewWorkers, "preview-workers", gitops.DefaultPreviewWorkers, "branch heads previewed at once, beside the watcher")
	c.Git.PreviewSandbox.flags(cmd)
	return cmd
}

// viewCacheBytes is server.Config.ViewCacheBytes for --view-cache-mb.
func viewCacheBytes(mb int) int {
	if mb <= 0 {
		return -1
	}
	return mb << 20
}

// merge fills the flags the command line did not set from the config file.
func merge(cmd *cobra.Command, c *serveConfig, file serveConfig) {
	set := func(flag string, dst *string, v string) {
		if !cmd.Flags().Changed(flag) && v != "" {
			*dst = v
		}
	}
	set("listen", &c.Listen, file.Listen)
	set("public-url", &c.PublicURL, file.PublicURL)
	set("tls-cert", &c.TLSCert, file.TLSCert)
	set("tls-key", &c.TLSKey, file.TLSKey)
	set("webhook-secret-file", &c.WebhookSecretFile, file.WebhookSecretFile)
	set("log-format", &c.LogFormat, file.LogFormat)
	set("drift-interval", &c.DriftInterval, file.DriftInterval)
	set("ttl-warn-before", &c.TTLWarnBefore, file.TTLWarnBefore)
	set("git-url", &c.Git.URL, file.Git.URL)
	set("git-branch", &c.Git.Branch, file.Git.Branch)
	set("git-path", &c.Git.Path, file.Git.Path)
	set("git-poll", &c.Git.Poll, file.Git.Poll)
	set("git-ssh-key-file", &c.Git.SSHKeyFile, file.Git.SSHKeyFile)
	set("git-token-file", &c.Git.TokenFile, file.Git.TokenFile)
	set("git-allowed-signers", &c.Git.AllowedSigners, file.Git.AllowedSigners)
	set("preview-branches", &c.Git.PreviewBranches, file.Git.PreviewBranches)
	set("preview-timeout", &c.Git.PreviewTimeout, file.Git.PreviewTimeout)
	if !cmd.Flags().Changed("preview-scripts") && file.Git.PreviewScripts {
		c.Git.PreviewScripts = true
	}
	if !cmd.Flags().Changed("preview-workers") && file.Git.PreviewWorkers > 0 {
		c.Git.PreviewWorkers = file.Git.PreviewWorkers
	}
	c.Git.PreviewSandbox.merge(cmd, file.Git.PreviewSandbox)
	if !cmd.Flags().Changed("max-concurrent-runs") && file.MaxConcurrentRuns > 0 {
		c.MaxConcurrentRuns = file.MaxConcurrentRuns
	}
	if !cmd.Flags().Changed("view-cache-mb") && file.ViewCacheMB != 0 {
		c.ViewCacheMB = file.ViewCacheMB
	}
	if !cmd.Flags().Changed("policies") {
		c.Policies = file.Policies
	}
	if !cmd.Flags().Changed("tool-env") {
		c.ToolEnv = file.ToolEnv
	}
	if !cmd.Flags().Changed("pipeline") {
		c.Pipelines = file.Pipelines
	}
	c.DataDir, c.TFBinary, c.Notifications = file.DataDir, file.TFBinary, file.Notifications
	c.HTTP, c.Owners = file.HTTP, file.Owners
}

// useStoreOf takes the store c names (knit.yaml's store or storeDSNFile)
// unless --store or --store-dsn-file named one.
func (d *deps) useStoreOf(c serveConfig) {
	if d.global.store == "" && d.global.storeDSNFile == "" {
		d.global.store, d.global.storeDSNFile = c.Store, c.StoreDSNFile
	}
}

// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func readSecretFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func (d *deps) serve(ctx context.Context, c serveConfig) error {
	var handler slog.Handler = slog.NewTextHandler(d.stderr, nil)
	if c.LogFormat == "json" {
		handler = slog.NewJSONHandler(d.stderr, nil)
	} else if c.LogFormat != "text" {
		return fmt.Errorf("--log-format %q: use text or json", c.LogFormat)
	}
	log := slog.New(handler)
	if c.cpuProfile != "" {
		stop, err := startCPUProfile(c.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if c.DataDir != "" && d.global.dataDir == "" {
		d.global.dataDir = c.DataDir
	}
	if c.TFBinary != "" && d.global.tfBinary == "" {
		d.global.tfBinary = c.TFBinary
	}
	d.useStoreOf(c)
	dir, err := d.dataDir()
	if err != nil {
		return err
	}
	d.global.lockLease = c.lockLease
	k, pool, err := d.openServeKnit(ctx, dir, c.ToolEnv, c.Policies, riverqueue.Conns(c.MaxConcurrentRuns))
	if err != nil {
		return err
	}
	defer k.Close()
	dsn, _ := d.storeDSN() // it parsed as openKnit opened it
	if dsn != "" {
		log.Info("store", "kind", "postgres", "at", storeName(dsn))
	}
	secret, err := readSecretFile(c.WebhookSecretFile)
	if err != nil {
		return fmt.Errorf("webhook secret: %w", err)
	}
	cfg := server.Config{Listen: c.Listen, PublicURL: c.PublicURL, TLSCert: c.TLSCert, TLSKey: c.TLSKey,
		WebhookSecret: secret, Logger: log, ViewCacheBytes: viewCacheBytes(c.ViewCacheMB)}
	if cfg.HTTP, err = c.httpLimits(); err != nil {
		return err
	}
	ctl, err := c.controllers(ctx, dir, log)
	if err != nil {
		return err
	}
	if dsn != "" {
		if err := c.replicas(ctx, pool, k, &cfg, &ctl); err != nil {
			return err
		}
	}
	return runServe(ctx, d, k, cfg, ctl, dir)
}

// replicas sets knit serve up to share its PostgreSQL store with other
// replicas: runs are River jobs in the database, their events go through
// it, and one elected leader runs GitOps, the schedules and the resumes.
// pool is the store's, which the queue shares.
func (c serveConfig) replicas(ctx context.Context, pool *pgxpool.Pool, k *knit.Knit, cfg *server.Config, ctl *controller.Config) error {
	q, err := riverqueue.Open(ctx, pool, k, riverqueue.Config{Max: c.MaxConcurrentRuns, Actor: "knit-serve",
		Logger: cfg.Logger, Lease: c.lockLease})
	if err != nil {
		return err
	}
	ctl.Queue, cfg.Remote = q, q
	ctl.Leader = leader.New(k.State(), c.leaderLease, "knit-serve", cfg.Logger)
	ctl.LeaderTasks = []func(context.Context) error{q.Reap}
	if ctl.Git != nil {
		ctl.Git.Lease = c.leaderLease // the leader's watcher takes over within one lease too
	}
	return nil
}

// controllers is the controllers' config: the run queue's bound, drift
// schedules, GitOps and notifications.
func (c serveConfig) controllers(ctx context.Context, dir string, log *slog.Logger) (controller.Config, error) {
	ctl := controller.Config{MaxConcurrentRuns: c.MaxConcurrentRuns, Logger: log,
		Drift: drift.Config{MinEvery: c.minDriftEvery, Tick: c.driftTick}}
	ctl.TTL.Tick = c.ttlTick
	var err error
	if c.TTLWarnBefore != "" {
		if ctl.TTL.WarnBefore, err = time.ParseDuration(c.TTLWarnBefore); err != nil || ctl.TTL.WarnBefore <= 0 {
			return ctl, fmt.Errorf("--ttl-warn-before %q: want a positive duration such as 1h", c.TTLWarnBefore)
		}
	}
	if c.DriftInterval != "" {
		if ctl.Drift.Interval, err = time.ParseDuration(c.DriftInterval); err != nil {
			return ctl, fmt.Errorf("--drift-interval: %w", err)
		}
	}
	if c.Git.URL != "" {
		poll, err := time.ParseDuration(c.Git.Poll)
		if err != nil {
			return ctl, fmt.Errorf("--git-poll: %w", err)
		}
		if _, err := path.Match(c.Git.PreviewBranches, ""); err != nil {
			return ctl, fmt.Errorf("--preview-branches %q: %w; write a pattern such as feature/*", c.Git.PreviewBranches, err)
		}
		previewTimeout, err := time.ParseDuration(c.Git.PreviewTimeout)
		if err != nil || previewTimeout <= 0 {
			return ctl, fmt.Errorf("--preview-timeout %q: want a positive duration such as 5m", c.Git.PreviewTimeout)
		}
		if c.Git.PreviewWorkers <= 0 {
			return ctl, fmt.Errorf("--preview-workers %d: want 1 or more", c.Git.PreviewWorkers)
		}
		preview := knit.PreviewPolicy{Scripts: c.Git.PreviewScripts}
		if c.Git.PreviewBranches != "" {
			if preview, err = c.Git.PreviewSandbox.policy(dir, log); err != nil {
				return ctl, err
			}
			preview.Scripts = c.Git.PreviewScripts
		}
		if err := gitops.CheckOwners(c.Owners); err != nil {
			return ctl, fmt.Errorf("knit.yaml: %w", err)
		}
		ctl.Git = &gitops.Config{Poll: poll, Spec: gitOptions(ctx, dir), PreviewBranches: c.Git.PreviewBranches, Owners: c.Owners,
			PreviewTimeout: previewTimeout, PreviewWorkers: c.Git.PreviewWorkers, Preview: preview,
			Config: gitwatch.Config{URL: c.Git.URL, Branch: c.Git.Branch, Path: c.Git.Path,
				SSHKeyFile: c.Git.SSHKeyFile, TokenFile: c.Git.TokenFile, AllowedSigners: c.Git.AllowedSigners, CacheDir: filepath.Join(dir, "git"), KeepTrees: c.gitKeepTrees}}
	}
	if len(c.Pipelines) > 0 {
		if ctl.Git == nil {
			return ctl, fmt.Errorf("--pipeline needs --git-url: pipelines and their stages' files are read from git")
		}
		g := ctl.Git.Config
		g.CacheDir = filepath.Join(dir, "pipeline-git")
		ctl.Git.Pipelines = c.Pipelines // their stages are previewed on branches
		ctl.Pipelines = &promotion.Config{Git: g, Files: c.Pipelines, Spec: ctl.Git.Spec, Poll: ctl.Git.Poll, Tick: c.pipelineTick}
	}
	for _, n := range c.Notifications {
		secret, err := readSecretFile(n.SecretFile)
		if err != nil {
			return ctl, fmt.Errorf("notification %s: %w", n.Name, err)
		}
		ctl.Notify = append(ctl.Notify, notify.Sink{Name: n.Name, Kind: n.Kind, URL: n.URL, Secret: secret, Events: n.Events})
	}
	return ctl, nil
}

// runServe wires the HTTP server to the controllers and runs both until
// ctx ends: the runs a crash or a shutdown interrupted are queued again,
// the server listens, the controllers start. At the end the controllers
// stop first (running tools are interrupted and their runs recorded),
// then the server drains.
func runServe(ctx context.Context, d *deps, k *knit.Knit, cfg server.Config, ctl controller.Config, dir string) error {
	var srv *server.Server
	ctl.RunURL = func(id string) string { return srv.RunURL(id) } // called once srv listens
	set, err := controller.New(k, ctl)
	if err != nil {
		return err
	}
	cfg.Queue, cfg.Rollouts = set.Queue, set.Rollout
	if set.Git != nil { // a nil *Reconciler in the interface would read as GitOps on
		cfg.Git = set.Git
	}
	if set.Promotion != nil {
		cfg.Pipelines = set.Promotion
	}
	if srv, err = server.New(k, cfg); err != nil {
		return err
	}
	if err := set.Resume(ctx); err != nil {
		return err
	}
	if err := srv.Open(ctx); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- set.Run(ctx) }()
	fmt.Fprintf(d.stderr, "knit serve: listening on %s (data dir %s)\n", srv.Addr(), dir)
	<-ctx.Done()
	cfg.Logger.Info("shutting down: interrupting running tools")
	closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	select {
	case err := <-done:
		if err != nil {
			cfg.Logger.Error("controllers", "err", err)
		}
	case <-closeCtx.Done():
	}
	return srv.Close(closeCtx)
}

// httpLimits are the config file's http block as server limits (zero:
// the server's default).
func (c serveConfig) httpLimits() (server.HTTPLimits, error) {
	l := server.HTTPLimits{MaxConns: c.HTTP.MaxConnections, MaxBodyBytes: int64(c.HTTP.MaxBodyMB) << 20}
	for _, d := range []struct {
		name, value string
		to          *time.Duration
	}{{"readTimeout", c.HTTP.ReadTimeout, &l.ReadTimeout}, {"idleTimeout", c.HTTP.IdleTimeout, &l.IdleTimeout},
		{"streamWriteTimeout", c.HTTP.StreamWriteTimeout, &l.WriteTimeout}} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(d.value)
		if err != nil || v <= 0 {
			return l, fmt.Errorf("config http.%s: %q is not a positive duration (e.g. 30s)", d.name, d.value)
		}
		*d.to = v
	}
	if c.HTTP.MaxConnections < 0 || c.HTTP.MaxBodyMB < 0 {
		return l, fmt.Errorf("config http: maxConnections and maxBodyMB must not be negative")
	}
	return l, nil
}
