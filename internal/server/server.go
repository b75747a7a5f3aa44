// Package server is knit serve's HTTP side: the API under /api/v1 over the
// knit library, with token auth, server-sent events of runs, the signed git
// webhook and metrics, and the dashboard at /. It routes, authenticates
// and encodes; the run queue, the GitOps reconciler and the drift
// scheduler are controllers of their own (internal/controller) that the
// caller runs beside it and hands in (Config.Queue, Config.Git). It is a
// type with a lifecycle: New registers routes, Open listens (port errors
// surface) and serves, Close drains.
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

	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
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
	// Queue is the run queue API calls and the dashboard submit runs to
	// (required).
	Queue Queue
	// Git, when set, is the GitOps reconciler a signed webhook wakes (nil:
	// GitOps off; pass a nil interface, not a nil pointer).
	Git GitOps
	// Pipelines, when set, builds the runs of a pipeline's releases for
	// POST /api/v1/pipelines/{name}/plan (promotion.Controller; nil: no
	// pipelines followed, a nil interface as for Git).
	Pipelines knit.StageRuns
	// WebhookSecret is the HMAC key of POST /api/v1/webhooks/git.
	WebhookSecret string
	Logger        *slog.Logger
	// ViewCacheBytes bounds the cache of encoded environment views
	// (default 64 MiB; negative: no cache).
	ViewCacheBytes int
	// HTTP bounds what each client may hold of the server.
	HTTP HTTPLimits
	// Remote, when set, streams the events of runs executing in another
	// replica sharing the store (riverqueue.Queue); nil: runs are this
	// process's only.
	Remote RemoteRuns
	// Rollouts carries out what a person's promote, abort or retry of a
	// rollout leads to (rollout.Driver); nil: its run goes to Queue, and
	// a pause it leads to waits for the next start.
	Rollouts RolloutDriver
}

// RolloutDriver carries a rollout's next action out (rollout.Driver):
// queues its run (returning the run's ID) or waits out its pause.
type RolloutDriver interface {
	Act(env string, a knit.RolloutAction) (runID string, err error)
}

// RemoteRuns streams a run executing elsewhere: its events from the first
// after seq after, until its last; ok is false when it runs nowhere.
type RemoteRuns interface {
	Follow(ctx context.Context, id string, after int64) (events <-chan engine.Event, ok bool)
}

// Queue is the run queue as the API sees it (runqueue.Queue): it submits
// runs, reads a queued run's state and its depth, and cancels.
type Queue interface {
	Enqueue(req knit.RunRequest, env string) (string, error)
	// Queued reports whether the queue knows run id, and its environment.
	Queued(id string) (env string, ok bool)
	Job(id string) (*runqueue.Job, bool)
	Cancel(id string) error
	Depth() (queued, running int)
	// OnFinish adds a listener of every run's outcome (the metrics).
	OnFinish(func(runqueue.Outcome))
}

// GitOps is the reconciler as the API sees it (gitops.Reconciler).
type GitOps interface {
	// Wake asks for a fetch now.
	Wake()
	// LastPoll is when the last poll succeeded (zero: never).
	LastPoll() time.Time
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
	queue Queue
	met   *metrics

	// ctx lives as long as the server: Close cancels it, ending the
	// requests that wait (event streams).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ready  chan struct{}
	// views caches encoded environment views by version.
	views *viewCache
	// fleet reads the live environments sets generate from.
	fleet *knit.Fleet
}

// New builds a server over k and cfg.Queue. Nothing listens until Open.
func New(k *knit.Knit, cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:7070"
	}
	if u, err := url.Parse(cfg.PublicURL); cfg.PublicURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return nil, fmt.Errorf("public URL %q: give the dashboard's address as people reach it, e.g. https://knit.example.com", cfg.PublicURL)
	}
	if cfg.Queue == nil {
		return nil, errors.New("server: no run queue (Config.Queue)")
	}
	if cfg.ViewCacheBytes == 0 {
		cfg.ViewCacheBytes = defaultViewCacheBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.HTTP = cfg.HTTP.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, k: k, log: cfg.Logger, mux: http.NewServeMux(), ctx: ctx, cancel: cancel, ready: make(chan struct{}),
		queue: cfg.Queue, views: newViewCache(cfg.ViewCacheBytes), fleet: knit.NewFleet(k)}
	s.met = newMetrics(k, s.views, cfg.Queue, cfg.Git)
	cfg.Queue.OnFinish(s.met.runFinished)
	s.routes()
	// The dashboard at "/": its runs go through the same queue.
	ui, err := web.New(k, web.Options{Runs: cfg.Queue, Logger: cfg.Logger, WriteTimeout: cfg.HTTP.WriteTimeout, Remote: cfg.Remote})
	if err != nil {
		cancel()
		return nil, err
	}
	ui.Register(s.mux)
	return s, nil
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

// RunURL is the dashboard page of run id, for the links notifications
// carry: under PublicURL, or the address the server listens on.
func (s *Server) RunURL(id string) string {
	return s.baseURL() + "/runs/" + url.PathEscape(id)
}

// Open listens, and serves in the background.
func (s *Server) Open(ctx context.Context) error {
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

// Close ends the requests that wait (event streams) and waits for the
// HTTP server to drain, until ctx ends. The controllers stop with their
// own context: stop them first, so that the runs they interrupt are
// recorded before the event streams end.
func (s *Server) Close(ctx context.Context) error {
	// Cancelling first ends the requests that wait on runs (event
	// streams), so that Shutdown has nothing left to drain.
	s.cancel()
	var err error
	if s.srv != nil {
		err = s.srv.Shutdown(ctx)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return err
}
