package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
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
	k       *knit.Knit
	opts    Options
	log     *slog.Logger
	pages   map[string]*template.Template
	static  fs.FS
	csrfKey []byte
	// cop refuses cross-origin POSTs (Origin and Sec-Fetch-Site checks).
	cop *http.CrossOriginProtection

	teamsMu    sync.Mutex
	teamsCache []string
	teamsAt    time.Time
}

//go:embed templates/*.html templates/partials/*.html
var templateFS embed.FS

// Only what pages load is embedded: axe-core is vendored for tests alone.
//
//go:embed static/app.css static/app.js static/vendor/htmx.min.js static/vendor/htmx-ext-sse.min.js static/vendor/dagre.min.js
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
	w := &Web{k: k, opts: opts, log: opts.Logger, pages: map[string]*template.Template{}, cop: http.NewCrossOriginProtection()}
	w.csrfKey = make([]byte, 32)
	if _, err := rand.Read(w.csrfKey); err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	w.static = sub
	funcs := template.FuncMap{"ago": w.ago, "until": w.until, "tone": toneOf[string], "when": when, "commit": newCommit, "changeForm": newChangeForm, "canPromote": canPromote}
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
		w.pages[base] = t
	}
	return w, nil
}

// Register mounts the dashboard's routes on mux: pages at "/", static
// files under /static/.
func (w *Web) Register(mux *http.ServeMux) {
	viewer, operator := store.Role(store.RoleViewer), store.Role(store.RoleOperator)
	h := func(pattern string, handler http.Handler) { mux.Handle(pattern, secured(handler)) }
	h("GET /static/", http.StripPrefix("/static/", w.cacheable(http.FileServerFS(w.static))))
	h("GET /login", http.HandlerFunc(w.loginPage))
	h("POST /login", w.cop.Handler(http.HandlerFunc(w.login)))
	h("POST /logout", w.page(viewer, w.logout))
	h("GET /{$}", w.page(viewer, w.environments))
	h("GET /live", w.page(viewer, w.liveAll))
	h("GET /env/{team}/{env}", w.page(viewer, w.environment))
	h("GET /env/{team}/{env}/live", w.page(viewer, w.liveEnv))
	h("GET /env/{team}/{env}/diff", w.page(viewer, w.diff))
	h("GET /env/{team}/{env}/teardown", w.page(operator, w.teardownConfirm))
	h("POST /env/{team}/{env}/run", w.page(operator, w.startRun))
	h("GET /env/{team}/{env}/c/{name}", w.page(viewer, w.component))
	h("GET /runs/{id}", w.page(viewer, w.run))
	h("GET /runs/{id}/events", w.page(viewer, w.runEvents))
	h("GET /approvals", w.page(viewer, w.approvals))
	h("POST /approvals/decide", w.page(operator, w.decide))
	h("GET /audit", w.page(viewer, w.audit))
	h("GET /compare", w.page(viewer, w.compare))
	h("GET /previews", w.page(viewer, w.previews))
	h("GET /pipelines", w.page(viewer, w.pipelines))
	h("GET /pipelines/{name}", w.page(viewer, w.pipeline))
	h("POST /pipelines/{name}/promote", w.page(operator, w.promote))
	h("POST /pipelines/{name}/rollback", w.page(operator, w.rollback))
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
	Token store.Token
	CSRF  string
	// CanAct is true for operators and admins: they see action buttons.
	CanAct bool
}

// csrfFor derives a session's CSRF token from its token's hash: stable for
// the session, unguessable without the server's key, never the token itself.
func (w *Web) csrfFor(tokenHash string) string {
	m := hmac.New(sha256.New, w.csrfKey)
	m.Write([]byte(tokenHash))
	return hex.EncodeToString(m.Sum(nil))
}

type handler func(rw http.ResponseWriter, r *http.Request, s *session)

// page authenticates a request from its cookie (a missing or dead one goes
// to the login page), checks the role, and on POST checks the origin and
// the form's CSRF token.
func (w *Web) page(role store.Role, h handler) http.Handler {
	inner := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		var tok store.Token
		if err == nil {
			tok, err = w.k.Authenticate(r.Context(), c.Value)
		}
		if err != nil {
			if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
				http.Redirect(rw, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(rw, "sign in first: no valid token", http.StatusUnauthorized)
			return
		}
		s := &session{Token: tok, CSRF: w.csrfFor(tok.Hash), CanAct: tok.Role.AtLeast(store.RoleOperator)}
		if r.Method == http.MethodPost {
			got := r.PostFormValue("csrf")
			if subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) != 1 {
				w.errorPage(rw, r, s, http.StatusForbidden, errors.New("this form is missing its CSRF token or it is out of date: reload the page and try again"))
				return
			}
		}
		if !tok.Role.AtLeast(role) {
			w.errorPage(rw, r, s, http.StatusForbidden, fmt.Errorf("token %s is a %s; this needs an %s", tok.Name, tok.Role, role))
			return
		}
		// The library resolves environments as this token sees them.
		h(rw, r.WithContext(knit.WithCaller(r.Context(), tok)), s)
	})
	return w.cop.Handler(inner)
}

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
}

func (w *Web) render(rw http.ResponseWriter, r *http.Request, s *session, code int, name, title, nav string, data any) {
	t, ok := w.pages[name]
	if !ok {
		http.Error(rw, "no page "+name, http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(code)
	if err := t.ExecuteTemplate(rw, "layout", layoutData{Title: title, Nav: nav, Session: s, Flash: r.URL.Query().Get("flash"), Page: data}); err != nil {
		w.log.Error("render", "page", name, "err", err)
	}
}

func (w *Web) errorPage(rw http.ResponseWriter, r *http.Request, s *session, code int, err error) {
	if code == 0 {
		code = statusOf(err)
	}
	if code >= 500 {
		w.log.Error("dashboard request failed", "path", r.URL.Path, "err", err)
	}
	w.render(rw, r, s, code, "error", http.StatusText(code), "", map[string]any{"Code": code, "Message": err.Error()})
}

// statusOf is err's HTTP status, as the API answers it (httperr).
func statusOf(err error) int {
	code, _ := httperr.Status(err)
	return code
}

func (w *Web) loginPage(rw http.ResponseWriter, r *http.Request) {
	w.render(rw, r, nil, http.StatusOK, "login", "Sign in", "", map[string]string{"Next": safeNext(r.URL.Query().Get("next")), "Error": ""})
}

// login checks a pasted token and keeps it in an HttpOnly, SameSite=Strict
// cookie (Secure under TLS).
func (w *Web) login(rw http.ResponseWriter, r *http.Request) {
	secret := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	if _, err := w.k.Authenticate(r.Context(), secret); err != nil {
		w.render(rw, r, nil, http.StatusUnauthorized, "login", "Sign in", "", map[string]string{"Next": next,
			"Error": "That token is not valid (unknown or revoked). Create one with: knit token create NAME --role viewer"})
		return
	}
	http.SetCookie(rw, &http.Cookie{Name: cookieName, Value: secret, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int((12 * time.Hour).Seconds())})
	http.Redirect(rw, r, next, http.StatusSeeOther)
}

func (w *Web) logout(rw http.ResponseWriter, r *http.Request, _ *session) {
	http.SetCookie(rw, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(rw, r, "/login", http.StatusSeeOther)
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

// ago says how long before now t was, in words.
func (w *Web) ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := w.opts.Now().Sub(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// when is a time for a title attribute.
// until says how far off t is: "in 3h12m", or "now" once past.
func (w *Web) until(t time.Time) string {
	d := t.Sub(w.opts.Now())
	if d <= 0 {
		return "now"
	}
	if d >= time.Minute {
		d = d.Truncate(time.Minute)
	}
	return "in " + strings.TrimSuffix(d.Truncate(time.Second).String(), "0s")
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// ctxErr reports a client that went away, which is not worth logging.
func ctxErr(ctx context.Context) bool { return ctx.Err() != nil }
