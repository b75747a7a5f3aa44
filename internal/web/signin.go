package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// signIn is who may look at the dashboard: the login page, the cookie it
// sets, and page, which lets a request reach its handler only signed in,
// with the role it needs and, for a form, its CSRF token.
type signIn struct {
	k       *knit.Knit
	pages   *pages
	csrfKey []byte
	// cop refuses cross-origin POSTs (Origin and Sec-Fetch-Site checks).
	cop *http.CrossOriginProtection
}

// csrfFor derives a session's CSRF token from its token's hash
// (knit.HashToken of the cookie's secret): stable for
// the session, unguessable without the server's key, never the token itself.
func (w *signIn) csrfFor(tokenHash string) string {
	m := hmac.New(sha256.New, w.csrfKey)
	m.Write([]byte(tokenHash))
	return hex.EncodeToString(m.Sum(nil))
}

// page authenticates a request from its Authorization header (a script:
// "Bearer TOKEN", as the API takes it) or else its cookie (a missing or
// dead one goes to the login page), checks the role, and on POST checks
// the origin and the form's CSRF token. A bearer token reads pages only:
// a POST carrying one is refused, whatever else it carries, so forms are
// only ever sent by a signed-in browser, with their CSRF token; scripts
// act through the API.
func (w *signIn) page(role store.Role, h handler) http.Handler {
	inner := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		secret, bearer, err := credential(r)
		var tok view.Token
		if err == nil {
			tok, err = w.k.Authenticate(r.Context(), secret)
		}
		if err != nil {
			if bearer {
				rw.Header().Set("WWW-Authenticate", `Bearer realm="knit"`)
				http.Error(rw, "the bearer token is not valid (unknown or revoked): "+err.Error(), http.StatusUnauthorized)
				return
			}
			if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
				http.Redirect(rw, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(rw, "sign in first: no valid token", http.StatusUnauthorized)
			return
		}
		s := &session{Token: tok, CSRF: w.csrfFor(knit.HashToken(secret)), CanAct: tok.Role.AtLeast(store.RoleOperator)}
		if bearer && r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.pages.errorPage(rw, r, s, http.StatusForbidden, errors.New("a bearer token reads the dashboard only: sign in at /login to use its forms, or act through the API (/api/v1)"))
			return
		}
		if r.Method == http.MethodPost {
			got := r.PostFormValue("csrf")
			if subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) != 1 {
				w.pages.errorPage(rw, r, s, http.StatusForbidden, errors.New("this form is missing its CSRF token or it is out of date: reload the page and try again"))
				return
			}
		}
		if !tok.Role.AtLeast(role) {
			w.pages.errorPage(rw, r, s, http.StatusForbidden, fmt.Errorf("token %s is a %s; this needs an %s", tok.Name, tok.Role, role))
			return
		}
		// The library resolves environments as this token sees them.
		h(rw, r.WithContext(knit.WithCaller(r.Context(), tok)), s)
	})
	return w.cop.Handler(inner)
}

// credential is the request's token: from its Authorization header when
// it has one (bearer is true then, and any other scheme is an error), or
// else from the login cookie.
func credential(r *http.Request) (secret string, bearer bool, err error) {
	if a := r.Header.Get("Authorization"); a != "" {
		secret, ok := strings.CutPrefix(a, "Bearer ")
		if !ok {
			return "", true, errors.New("the Authorization header must be Bearer TOKEN (knit token create)")
		}
		return strings.TrimSpace(secret), true, nil
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return "", false, err
	}
	return c.Value, false, nil
}

func (w *signIn) loginPage(rw http.ResponseWriter, r *http.Request) {
	w.pages.render(rw, r, nil, http.StatusOK, "login", "Sign in", "", map[string]string{"Next": safeNext(r.URL.Query().Get("next")), "Error": ""})
}

// login checks a pasted token and keeps it in an HttpOnly, SameSite=Strict
// cookie (Secure under TLS).
func (w *signIn) login(rw http.ResponseWriter, r *http.Request) {
	secret := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	if _, err := w.k.Authenticate(r.Context(), secret); err != nil {
		w.pages.render(rw, r, nil, http.StatusUnauthorized, "login", "Sign in", "", map[string]string{"Next": next,
			"Error": "That token is not valid (unknown or revoked). Create one with: knit token create NAME --role viewer"})
		return
	}
	http.SetCookie(rw, &http.Cookie{Name: cookieName, Value: secret, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int((12 * time.Hour).Seconds())})
	http.Redirect(rw, r, next, http.StatusSeeOther)
}

func (w *signIn) logout(rw http.ResponseWriter, r *http.Request, _ *session) {
	http.SetCookie(rw, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(rw, r, "/login", http.StatusSeeOther)
}
