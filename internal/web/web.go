package web

import (
	"context"
	"crypto/rand"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/httperr"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Runs is what the dashboard needs from the server: runs it starts go
// through the server's queue, as API calls do. Enqueue returns the run's
// ID at once; Queued reports whether the queue knows a run ID (queued,
// running or lately finished) and its environment.
type Runs interface {
	Enqueue(req knit.RunRequest, env string) (string, error)
	Queued(id string) (env string, ok bool)
}

// Options configure the dashboard.
type Options struct {
	// Runs queues runs (required for action buttons to work).
	Runs   Runs
	Logger *slog.Logger
	// Now is the clock for "5 minutes ago" (tests).
	Now func() time.Time
	// PollInterval is how often live views look for a new run (default 500ms).
	PollInterval time.Duration
	// WriteTimeout bounds each write of a live view's event stream: a
	// browser that stops reading is cut (0: no bound).
	WriteTimeout time.Duration
	// Remote, when set, streams the events of runs executing in another
	// replica sharing the store (the server's Remote); nil: runs are this
	// process's only.
	Remote RemoteRuns
}

// RemoteRuns streams a run executing elsewhere: its events from the first
// after seq after, until its last; ok is false when it runs nowhere.
type RemoteRuns interface {
	Follow(ctx context.Context, id string, after int64) (events <-chan engine.Event, ok bool)
}

// Web is the dashboard. It is safe for concurrent use.
type Web struct {
	*pages // renders pages, error pages and fragments
	k      *knit.Knit
	opts   Options
	log    *slog.Logger
	static fs.FS
	signIn *signIn // the login page and who may reach a page
	live   *live   // the live views' event streams
	graphs layouts // the environments' graph layouts, by shape

	teamsMu    sync.Mutex
	teamsCache []string
	teamsAt    time.Time
}

//go:embed templates/*.html templates/partials/*.html
var templateFS embed.FS

// Only what pages load is embedded: axe-core is vendored for tests alone.
//
//go:embed static/app.css static/app.js static/vendor/htmx.min.js static/graph.js static/vendor/htmx-ext-sse.min.js
var staticFS embed.FS

// cookieName holds the pasted token.
const cookieName = "knit_token"

// New builds the dashboard over k.
func New(k *knit.Knit, opts Options) (*Web, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	w := &Web{k: k, opts: opts, log: opts.Logger, pages: &pages{byName: map[string]*template.Template{}, log: opts.Logger, now: opts.Now}}
	w.signIn = &signIn{k: k, pages: w.pages, csrfKey: make([]byte, 32), cop: http.NewCrossOriginProtection()}
	if _, err := rand.Read(w.signIn.csrfKey); err != nil {
		return nil, err
	}
	w.live = &live{k: k, poll: opts.PollInterval, writeTimeout: opts.WriteTimeout, envRef: w.envRef}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	w.static = sub
	funcs := template.FuncMap{"ago": w.ago, "until": w.until, "tone": toneOf[string], "when": when, "commit": newCommit, "changeForm": newChangeForm, "canPromote": canPromote, "bigGraph": func() int { return bigGraph }}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" || strings.HasPrefix(base, "_") {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials/*.html", n)
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", base, err)
		}
		w.byName[base] = t
	}
	return w, nil
}

// Register mounts the dashboard's routes on mux: pages at "/", static
// files under /static/.
func (w *Web) Register(mux *http.ServeMux) {
	viewer, operator := store.Role(store.RoleViewer), store.Role(store.RoleOperator)
	h := func(pattern string, handler http.Handler) { mux.Handle(pattern, secured(handler)) }
	h("GET /static/", http.StripPrefix("/static/", w.cacheable(http.FileServerFS(w.static))))
	page := w.signIn.page
	h("GET /login", http.HandlerFunc(w.signIn.loginPage))
	h("POST /login", w.signIn.cop.Handler(http.HandlerFunc(w.signIn.login)))
	h("POST /logout", page(viewer, w.signIn.logout))
	h("GET /{$}", page(viewer, w.environments))
	h("GET /live", page(viewer, w.live.all))
	h("GET /env/{team}/{env}", page(viewer, w.environment))
	h("GET /env/{team}/{env}/live", page(viewer, w.live.env))
	h("GET /env/{team}/{env}/diff", page(viewer, w.diff))
	h("GET /env/{team}/{env}/teardown", page(operator, w.teardownConfirm))
	h("POST /env/{team}/{env}/run", page(operator, w.startRun))
	h("GET /env/{team}/{env}/c/{name}", page(viewer, w.component))
	h("GET /runs/{id}", page(viewer, w.run))
	h("GET /runs/{id}/events", page(viewer, w.runEvents))
	h("GET /approvals", page(viewer, w.approvals))
	h("POST /approvals/decide", page(operator, w.decide))
	h("GET /audit", page(viewer, w.audit))
	h("GET /compare", page(viewer, w.compare))
	h("GET /previews", page(viewer, w.previews))
	h("GET /pipelines", page(viewer, w.pipelines))
	h("GET /pipelines/{name}", page(viewer, w.pipeline))
	h("POST /pipelines/{name}/promote", page(operator, w.promote))
	h("POST /pipelines/{name}/rollback", page(operator, w.rollback))
	h("GET /environments/graph", page(viewer, w.envGraph))
	h("GET /fleets", page(viewer, w.fleets))
	h("GET /fleets/{team}/{set}", page(viewer, w.fleet))
	h("GET /fleets/{team}/{set}/live", page(viewer, w.live.fleet))
	h("POST /fleets/{team}/{set}/actions", page(operator, w.fleetAct))
}

func (w *Web) cacheable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Cache-Control", "public, max-age=300")
		h.ServeHTTP(rw, r)
	})
}

// csp lets pages load only this site's scripts, styles and images, and no
// site frame them.
const csp = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// secured sets the security headers of every dashboard response, the
// login page and error pages included.
func secured(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hd := rw.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		h.ServeHTTP(rw, r)
	})
}

// session is who is looking: their token and the CSRF token of their forms.
type session struct {
	Token view.Token
	CSRF  string
	// CanAct is true for operators and admins: they see action buttons.
	CanAct bool
}

type handler func(rw http.ResponseWriter, r *http.Request, s *session)

// canSee checks the session's token may look at team's environments.
func canSee(s *session, team string) error {
	if !knit.CanSee(s.Token, team) {
		return fmt.Errorf("%w: token %s is limited to teams %s", knit.ErrNotFound, s.Token.Name, strings.Join(s.Token.Teams, ", "))
	}
	return nil
}

// layoutData is what every page gets beside its own data.
type layoutData struct {
	Title   string
	Nav     string
	Session *session
	Flash   string
	Page    any
	// Still is a page without live updates (?live=0).
	Still bool
}

// statusOf is err's HTTP status, as the API answers it (httperr).
func statusOf(err error) int {
	code, _ := httperr.Status(err)
	return code
}

// safeNext keeps a redirect on this site: only a path is taken, with no
// scheme, host, backslash or control character. Browsers drop tabs and
// line breaks from a URL and read "\\" as "/", so "/\t/evil.example"
// or "/\\evil.example" would leave for another origin.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsFunc(next, func(c rune) bool { return c == '\\' || unicode.IsControl(c) }) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// ctxErr reports a client that went away, which is not worth logging.
func ctxErr(ctx context.Context) bool { return ctx.Err() != nil }
