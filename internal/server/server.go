// Package server is knit serve: the HTTP API under /api/v1 over the knit
// library, with token auth, a fair run queue, server-sent events of runs,
// GitOps, drift schedules, notifications and metrics. It is a type with a
// lifecycle: New registers routes, Open listens (port errors surface) and
// serves, Close drains.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/web"
)

// Config is how a Server runs.
type Config struct {
	// Listen is the address (default 127.0.0.1:7070: loopback only).
	Listen string
	// PublicURL is the dashboard's address as people reach it (a proxy's,
	// https://knit.example.com), for the links notifications carry;
	// default: http(s)://Addr().
	PublicURL string
	// TLSCert and TLSKey, when both set, serve HTTPS.
	TLSCert, TLSKey string
	// MaxConcurrentRuns bounds runs at once across environments (default 4).
	MaxConcurrentRuns int
	// WebhookSecret is the HMAC key of POST /api/v1/webhooks/git.
	WebhookSecret string
	// Actor names the server in the audit trail for what it starts itself.
	Actor  string
	Logger *slog.Logger
	// Git, when set, switches on GitOps.
	Git *GitConfig
	// DriftInterval, when set, checks every environment for drift this
	// often unless its file schedules otherwise.
	DriftInterval time.Duration
	// MinDriftEvery is the shortest "@every" drift schedule accepted
	// (default one minute; tests go lower), DriftTick how often due checks
	// are looked for (default one second).
	MinDriftEvery, DriftTick time.Duration
	// Notify are the sinks told about failed runs, drift, approvals needed,
	// teardowns and successes.
	Notify []notify.Sink
	// ViewCacheBytes bounds the cache of encoded environment views
	// (default 64 MiB; negative: no cache).
	ViewCacheBytes int
	// HTTP bounds what each client may hold of the server.
	HTTP HTTPLimits
	// Spec is what validating a commit's environment files knows beyond
	// the files: the git modules knit has fetched (see spec.Options).
	Spec spec.Options
}

// HTTPLimits bound what one client may hold: time to send a request,
// idle connections, header and body sizes, connections at once. Zero
// fields take the defaults (see withDefaults).
type HTTPLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers (default 10s),
	// ReadTimeout the whole request, body included (default 30s): a client
	// that announces a body and sends it slowly is cut. There is no global
	// write timeout, which would end event streams: a stream bounds each
	// of its writes by WriteTimeout (default 30s) instead, so a stream that
	// lasts an hour stays open while a client that stops reading is cut.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for this
	// long (default 2m).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (default 64 KiB).
	MaxHeaderBytes int
	// MaxBodyBytes bounds every request body (default 5 MiB; handlers
	// bound theirs lower).
	MaxBodyBytes int64
	// MaxConns is how many connections are served at once (default 1024):
	// more wait to be accepted.
	MaxConns int
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ReadHeaderTimeout, 10*time.Second)
	def(&l.ReadTimeout, 30*time.Second)
	def(&l.WriteTimeout, 30*time.Second)
	def(&l.IdleTimeout, 2*time.Minute)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 64 << 10
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = 5 << 20
	}
	if l.MaxConns <= 0 {
		l.MaxConns = 1024
	}
	return l
}

// Server is knit serve.
type Server struct {
	cfg   Config
	k     *knit.Knit
	log   *slog.Logger
	mux   *http.ServeMux
	srv   *http.Server
	ln    net.Listener
	queue *queue
	met   *metrics

	// ctx lives as long as the server: runs it starts are cancelled by Close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// background loops (git watcher, drift scheduler) register here.
	loops []func(ctx context.Context)
	ready chan struct{}
	// nudge asks the git watcher to fetch now (nil: GitOps off).
	nudge chan struct{}
	// drifts are the scheduled drift checks.
	drifts drifts
	notify *notify.Dispatcher
	// views caches encoded environment views by version.
	views *viewCache
	// gitMu serialises what the git loop and finished runs write of the
	// wants; wants tracks their queued runs.
	gitMu sync.Mutex
	wants wantRuns
}

// New builds a server over k. Nothing listens until Open. Bad notification
// sinks are an error.
func New(k *knit.Knit, cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:7070"
	}
	if u, err := url.Parse(cfg.PublicURL); cfg.PublicURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return nil, fmt.Errorf("public URL %q: give the dashboard's address as people reach it, e.g. https://knit.example.com", cfg.PublicURL)
	}
	if cfg.MaxConcurrentRuns <= 0 {
		cfg.MaxConcurrentRuns = 4
	}
	if cfg.ViewCacheBytes == 0 {
		cfg.ViewCacheBytes = defaultViewCacheBytes
	}
	if cfg.Actor == "" {
		cfg.Actor = "knit-serve"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.HTTP = cfg.HTTP.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, k: k, log: cfg.Logger, mux: http.NewServeMux(), ctx: ctx, cancel: cancel, ready: make(chan struct{}),
		views: newViewCache(cfg.ViewCacheBytes)}
	s.met = newMetrics(k, s.views)
	d, err := notify.New(cfg.Notify, notify.Options{Logger: cfg.Logger, Outbox: outbox{k.Outbox()}})
	if err != nil {
		cancel()
		return nil, err
	}
	s.notify = d
	s.queue = newQueue(ctx, k, cfg.MaxConcurrentRuns, s.log, s.met)
	s.queue.onFinish = s.runFinished
	s.queue.onShutdown = s.interruptedByShutdown
	s.routes()
	// The dashboard at "/": its runs go through this server's queue.
	ui, err := web.New(k, web.Options{Runs: s, Logger: cfg.Logger, WriteTimeout: cfg.HTTP.WriteTimeout})
	if err != nil {
		cancel()
		return nil, err
	}
	ui.Register(s.mux)
	if cfg.Git != nil {
		s.nudge = make(chan struct{}, 1)
		s.AddLoop(s.gitLoop)
	}
	s.AddLoop(s.driftLoop)
	return s, nil
}

// runFinished follows a run's end: the environment's drift schedule may
// have changed with its spec.
func (s *Server) runFinished(j *job, res *engine.Result) {
	if s.ctx.Err() == nil {
		s.refreshDrift(s.ctx, j.env)
	}
	for _, ev := range notifications(j, res) {
		ev.URL = s.runURL(ev.RunID)
		s.notify.Notify(ev)
	}
}

// baseURL is where people reach the dashboard: PublicURL, or the address
// the server listens on.
func (s *Server) baseURL() string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	scheme := "http"
	if s.cfg.TLSCert != "" {
		scheme = "https"
	}
	return scheme + "://" + s.Addr()
}

// runURL is the dashboard page of run id.
func (s *Server) runURL(id string) string {
	return s.baseURL() + "/runs/" + url.PathEscape(id)
}

// AddLoop registers a background loop started by Open and stopped by Close.
func (s *Server) AddLoop(fn func(ctx context.Context)) { s.loops = append(s.loops, fn) }

// Open resumes runs a crash or a shutdown interrupted, listens, and serves in the background.
func (s *Server) Open(ctx context.Context) error {
	if err := s.resume(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	lim := s.cfg.HTTP
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: lim.ReadHeaderTimeout, ReadTimeout: lim.ReadTimeout,
		IdleTimeout: lim.IdleTimeout, MaxHeaderBytes: lim.MaxHeaderBytes,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return s.ctx }}
	// Connections past the cap wait in the listen backlog, not in memory.
	ln = netutil.LimitListener(ln, lim.MaxConns)
	if s.cfg.TLSCert != "" || s.cfg.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("TLS: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	s.ln = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", "err", err)
		}
	}()
	for _, loop := range s.loops {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			loop(s.ctx)
		}()
	}
	close(s.ready)
	s.log.Info("knit serve listening", "addr", s.Addr(), "tls", s.cfg.TLSCert != "")
	return nil
}

// Addr is the address the server listens on (with the real port for :0).
func (s *Server) Addr() string {
	if s.ln == nil {
		return s.cfg.Listen
	}
	return s.ln.Addr().String()
}

// Handler is the server's routes, every request body bounded by
// HTTPLimits.MaxBodyBytes, for tests and embedding.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.HTTP.MaxBodyBytes)
		}
		s.mux.ServeHTTP(w, r)
	})
}

// Queued reports whether run id is one this server's queue knows (queued,
// running or lately finished), and its environment: the dashboard waits
// for such a run to start, and answers 404 for any other unknown ID.
func (s *Server) Queued(id string) (env string, ok bool) {
	j, ok := s.queue.job(id)
	if !ok {
		return "", false
	}
	return j.env, true
}

// Enqueue queues a run as the server would for an API call, returning its ID.
func (s *Server) Enqueue(req knit.RunRequest, env string) (string, error) {
	return s.queue.enqueue(req, env)
}

// Close stops taking work, interrupts running tools (their runs are
// recorded interrupted and their locks released) and waits for them, for
// the HTTP server to drain, and for the background loops, until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	// Cancelling first interrupts the runs and ends the requests that wait
	// on them (event streams), so that Shutdown has nothing left to drain.
	s.cancel()
	var err error
	if s.srv != nil {
		err = s.srv.Shutdown(ctx)
	}
	s.queue.wait(ctx)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Last, the notifications of what just ended: one short flush, the
	// rest kept in the store for the next start.
	if nerr := s.notify.Close(ctx); nerr != nil {
		s.log.Warn("notifications left undelivered", "err", nerr)
	}
	return err
}
